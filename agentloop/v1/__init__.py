"""Generated protobuf and gRPC code for the agentloop.v1 contract (see protos/); do not edit by hand."""
