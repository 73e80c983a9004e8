"""Side-by-side benchmark against a peer framework (LangGraph) on one fake model and one Postgres cluster."""
