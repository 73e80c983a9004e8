"""The Reasoner: one chat-completions call per RPC against any OpenAI-compatible endpoint."""
