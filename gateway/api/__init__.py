"""The gateway's gRPC surface: the Agent service's handlers, its server, health and paging.

Thin handlers over the run lifecycle (gateway.runs): what a request may ask, who may ask it,
and what the response holds. Nothing below imports this package.
"""
