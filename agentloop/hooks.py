"""Writing hooks for agentloop: code the gateway runs around each model call and tool round.

A hook module defines ``HOOKS: dict[str, Hook]``; the operator loads it into the gateway with
``AGENTLOOP_HOOK_MODULES`` and chooses which hooks every run gets (``AGENTLOOP_HOOKS``) and which a
client may add (``AGENTLOOP_CLIENT_HOOKS``); docs/hooks.md::

    from agentloop.hooks import Hook, HookContext

    def audit(ctx: HookContext, calls):
        print(ctx.user_id, [c.name for c in calls])
        return calls

    HOOKS = {"audit": Hook("audit", pre_acting=audit)}

- ``Hook``: a name and up to four optional callbacks (``pre_reasoning``, ``post_reasoning``,
  ``pre_acting``, ``post_acting``), each ``(ctx, value) -> value``, sync or async.
- ``HookContext``: who and where a callback runs (run, thread, user, step).
- ``redact``: the text rewrite of the built-in ``redact_secrets`` hook, for hooks of your own.
"""

from gateway.policies.hooks import Hook, HookContext, redact

__all__ = ["Hook", "HookContext", "redact"]
