"""The ground every agentloop process stands on: settings, errors, channels, serving, telemetry.

Nothing here imports a service (reasoner_svc, tool_svc, gateway), the client, the command line
or the public face: those stand on the kernel, never the other way round
(tests/unit/test_import_layers.py keeps it so). The pieces a client process needs (settings,
TLS, channels, retry, the contract's well-known types) import no server plumbing.
"""
