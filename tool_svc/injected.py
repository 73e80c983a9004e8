"""Injected parameters: values a tool receives from the run instead of from the model.

A tool declares one by annotating a parameter with one of the marker types
below (``typing.Annotated`` aliases carrying an :class:`Injected` marker)::

    @tool
    def summarize(topic: str, history: Conversation, user: UserId) -> str: ...

Schema derivation leaves such parameters out of the JSON schema (whose
``additionalProperties`` is false, so a model that sends one gets an
INVALID_ARGUMENTS result), the tool's spec lists them in
``injected_parameters``, and the executor fills them from the
``InjectedContext`` of the ExecuteRequest.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeAlias

from agentloop.kernel.channels import MAX_MESSAGE_BYTES
from agentloop.kernel.jsonlimits import JsonLimitError, json_kind, loads_bounded
from agentloop.v1 import common_pb2

InjectedKind: TypeAlias = Literal["conversation", "user_id", "thread_id", "run_id", "run_metadata"]

INJECTED_TYPES: Mapping[str, Any] = types.MappingProxyType(
    {
        "conversation": list[dict[str, Any]],
        "user_id": str,
        "thread_id": str,
        "run_id": str,
        "run_metadata": dict[str, Any],
    }
)
"""The Python type a parameter of each injected kind must have."""


@dataclass(frozen=True, slots=True)
class Injected:
    """Marks an ``Annotated`` parameter as filled by the executor; ``kind`` says with what."""

    kind: InjectedKind

    def __post_init__(self) -> None:
        if self.kind not in INJECTED_TYPES:
            raise ValueError(f"unknown injected kind {self.kind!r}; kinds: {', '.join(INJECTED_TYPES)}")


Conversation: TypeAlias = Annotated[list[dict[str, Any]], Injected("conversation")]
"""The conversation so far (system prompt excluded): a list of {"role", "content", ...} messages."""
UserId: TypeAlias = Annotated[str, Injected("user_id")]
"""The id of the user the run belongs to ("" when the caller sent none)."""
ThreadId: TypeAlias = Annotated[str, Injected("thread_id")]
"""The id of the run's thread ("" when the caller sent none)."""
RunId: TypeAlias = Annotated[str, Injected("run_id")]
"""The id of the run ("" when the caller sent none)."""
RunMetadata: TypeAlias = Annotated[dict[str, Any], Injected("run_metadata")]
"""Run metadata such as step, max_steps, tools_used, llm_calls ({} when the caller sent none)."""


MARKER_NAMES: Mapping[str, str] = types.MappingProxyType(
    {
        "conversation": "Conversation",
        "user_id": "UserId",
        "thread_id": "ThreadId",
        "run_id": "RunId",
        "run_metadata": "RunMetadata",
    }
)
"""The exported marker type of each kind, for error messages."""


def injected_markers(metadata: tuple[Any, ...]) -> list[Injected]:
    """The Injected markers among an ``Annotated`` type's metadata."""
    return [item for item in metadata if isinstance(item, Injected)]


@dataclass(frozen=True, slots=True)
class InjectedValues:
    """One batch's injected values, parsed once from its InjectedContext.

    ``conversation`` and ``run_metadata`` are None when the caller sent
    nothing; each call then gets its own empty list or dict. Parsed values are
    shared by every call of the batch: tools must treat them as read-only.
    """

    user_id: str = ""
    thread_id: str = ""
    run_id: str = ""
    conversation: list[dict[str, Any]] | None = None
    run_metadata: dict[str, Any] | None = None

    @classmethod
    def from_context(cls, context: common_pb2.InjectedContext | None) -> InjectedValues:
        """Parse ``context``; raise ValueError, starting with the field's name, when its JSON is unusable."""
        if context is None:
            return _EMPTY
        conversation = _parse(context.conversation_json, "conversation_json", list)
        if conversation is not None and not all(isinstance(message, dict) for message in conversation):
            raise ValueError("conversation_json: must be a JSON array of objects")
        return cls(
            user_id=context.user_id,
            thread_id=context.thread_id,
            run_id=context.run_id,
            conversation=conversation,
            run_metadata=_parse(context.run_metadata_json, "run_metadata_json", dict),
        )

    def value(self, kind: str) -> Any:
        """The value for a parameter of ``kind``: what the caller sent, or an empty value of its type."""
        if kind == "conversation":
            return [] if self.conversation is None else self.conversation
        if kind == "run_metadata":
            return {} if self.run_metadata is None else self.run_metadata
        if kind == "user_id":
            return self.user_id
        if kind == "thread_id":
            return self.thread_id
        if kind == "run_id":
            return self.run_id
        raise ValueError(f"unknown injected kind {kind!r}")


_EMPTY = InjectedValues()


def _parse(text: str, field: str, expected: type) -> Any:
    if not text:
        return None
    try:
        value = loads_bounded(text, max_bytes=MAX_MESSAGE_BYTES, what=field)
    except JsonLimitError as exc:
        raise ValueError(f"{field}: {exc.problem}") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise ValueError(f"{field}: is not valid JSON ({exc.msg} at {where})") from None
    if not isinstance(value, expected):
        wanted = "array" if expected is list else "object"
        raise ValueError(f"{field}: must be a JSON {wanted}, got {json_kind(value)}")
    return value
