"""The `agentloop` command: the roof over the services, the client and the scripted model.

Nothing imports this package back; `main` is the console script (``agentloop``) and
``python -m agentloop.cli`` runs it too.
"""

from agentloop.cli.main import main

__all__ = ["main"]
