"""The import path of hooks that earlier releases documented: ``from gateway.hooks import Hook``.

Hook modules written for those releases keep loading; new ones import `agentloop.hooks`.
"""

from gateway.policies.hooks import Hook, HookContext

__all__ = ["Hook", "HookContext"]
