"""Hooks: code that runs around reasoning and acting (seed 003's pre/post hooks).

A hook is registered by name. The operator's hooks (AGENTLOOP_HOOKS) run in
every run, whatever the client asks: they are the operator's protections (the
`redact_secrets` hook, say) and no client may switch them off. A run may add
hooks (RunOptions.hooks), but only those the operator lets clients add
(AGENTLOOP_CLIENT_HOOKS). Each of a hook's four callbacks is optional and may
be sync or async:

- pre_reasoning(ctx, messages) -> messages: what the model is about to see
  (not stored in the thread);
- post_reasoning(ctx, message) -> message: the model's answer before it is stored;
- pre_acting(ctx, calls) -> calls: tool calls before they run (same ids);
- post_acting(ctx, results) -> results: tool results before they are stored
  and shown to the model (the built-in `redact_secrets` lives here).

User hooks come from modules named in AGENTLOOP_HOOK_MODULES that define
`HOOKS: dict[str, Hook]`.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from agentloop.kernel.errors import InvalidArgument
from agentloop.v1 import common_pb2

T = TypeVar("T")


@dataclass(frozen=True)
class HookContext:
    """Who and where: passed to every hook callback."""

    run_id: str
    thread_id: str
    user_id: str
    step: int


Callback = Callable[[HookContext, Any], Any]


@dataclass(frozen=True)
class Hook:
    """A named set of optional callbacks."""

    name: str
    pre_reasoning: Callback | None = None
    post_reasoning: Callback | None = None
    pre_acting: Callback | None = None
    post_acting: Callback | None = None


async def call_hooks(hooks: Sequence[Hook], phase: str, ctx: HookContext, value: T) -> tuple[T, list[str]]:
    """Pass `value` through each hook's `phase` callback; returns it and which hooks changed it."""
    changed: list[str] = []
    for hook in hooks:
        callback: Callable[[HookContext, T], T | Awaitable[T]] | None = getattr(hook, phase)
        if callback is None:
            continue
        result = callback(ctx, value)
        new = await result if inspect.isawaitable(result) else result
        if new != value:
            changed.append(hook.name)
        value = new
    return value, changed


_SECRETS = [
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}"),
    re.compile(r"(?i)(\"?(?:password|passwd|secret|api[_-]?key|token)\"?\s*[:=]\s*\"?)([^\"\s,}]+)"),
]
REDACTED = "[REDACTED]"


def redact(text: str) -> str:
    """Text with API keys, bearer tokens and password/secret/token values replaced."""
    for pattern in _SECRETS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def _redact_results(ctx: HookContext, results: list[common_pb2.ToolResult]) -> list[common_pb2.ToolResult]:
    out = []
    for result in results:
        clean = redact(result.content)
        if clean == result.content:
            out.append(result)
            continue
        copy = common_pb2.ToolResult()
        copy.CopyFrom(result)
        copy.content = clean
        out.append(copy)
    return out


BUILTIN_HOOKS: dict[str, Hook] = {
    "redact_secrets": Hook("redact_secrets", post_acting=_redact_results),
}


CLIENT_HOOKS_DEFAULT = ("redact_secrets",)
"""Hooks a client may add unless the operator says otherwise: `redact_secrets` only hides text, so a
client asking for it can only protect more; hooks of user modules may act or change what the model
sees, so the operator approves each by name."""


class HookRegistry:
    """Hooks by name (built-ins and user modules'): the operator's, and those clients may add."""

    def __init__(
        self,
        modules: Iterable[str] = (),
        defaults: Iterable[str] = (),
        client_hooks: Iterable[str] = CLIENT_HOOKS_DEFAULT,
    ) -> None:
        self._hooks = dict(BUILTIN_HOOKS)
        for module_name in modules:
            module = importlib.import_module(module_name)
            hooks = getattr(module, "HOOKS", None)
            if not isinstance(hooks, dict):
                raise ValueError(f"hook module {module_name!r} must define HOOKS: dict[str, Hook]")
            for name, hook in hooks.items():
                if not isinstance(hook, Hook):
                    raise ValueError(f"{module_name}.HOOKS[{name!r}] is not a Hook")
                self._hooks[name] = hook
        self.defaults = tuple(defaults)
        self.client_hooks = tuple(client_hooks)
        for setting, names in (
            ("AGENTLOOP_HOOKS", self.defaults),
            ("AGENTLOOP_CLIENT_HOOKS", self.client_hooks),
        ):
            unknown = [name for name in names if name not in self._hooks]
            if unknown:
                raise ValueError(f"{setting} names unknown hooks {unknown}; known: {sorted(self._hooks)}")

    def names(self) -> list[str]:
        """Every registered hook name."""
        return sorted(self._hooks)

    def select(self, names: Sequence[str], field: str) -> tuple[Hook, ...]:
        """The hooks a run uses: the operator's, then those of `names` clients may add, in order.

        Naming an operator hook is allowed and changes nothing (it runs
        anyway, once): a run's stored options list every hook it uses, and
        a gateway that resumes it selects them again. Any other name must be
        one clients may add; an unknown name gets the same answer, so the
        operator's other hook names stay private.
        """
        chosen = list(self.defaults)
        for i, name in enumerate(names):
            if name in chosen:
                continue
            if name not in self.client_hooks:
                allowed = ", ".join(self.client_hooks) or "none"
                raise InvalidArgument(
                    f"{field}[{i}]", f"{name!r} is not a hook clients may add (allowed: {allowed})"
                )
            chosen.append(name)
        return tuple(self._hooks[name] for name in chosen)
