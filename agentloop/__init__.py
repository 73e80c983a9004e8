"""agentloop: a ReAct agent runtime split into gRPC services."""
