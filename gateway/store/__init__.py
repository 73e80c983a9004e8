"""Durable state of the gateway: threads, runs, checkpoints, messages, tool results and events."""
