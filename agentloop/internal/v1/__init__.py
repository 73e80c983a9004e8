"""Generated protobuf code of the gateway's storage format (see protos/agentloop/internal/); do not edit by hand."""
