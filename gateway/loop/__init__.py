"""The loop: its graph, its nodes (reason, act, compress, remember) and what a node is given.

A node is `async (state, ctx) -> Update`; `graph.run_graph` applies updates and checkpoints every
transition through the journal. Stands on the journal, the policies, the dependencies and the store.
"""
