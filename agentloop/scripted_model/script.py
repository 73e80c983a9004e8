"""The script a scripted model follows, and how a request picks its next turn.

A script is plain data (it round-trips through JSON) so that tests, benchmarks and the CLI can
describe a whole agent conversation up front: which tools the "model" calls, in which order, and
what it finally says. Turn selection is a pure function of the request's messages, so the server
keeps no per-conversation state and any number of conversations can run against it at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast, get_args

from agentloop.scripted_model.messages import last_user_index, message_text, render
from agentloop.scripted_model.recording import Recording

DEFAULT_FINAL_TEXT = "I have to stop here; this is what I found so far."
"""Said instead of a tool-calling turn when the request offers no tools (e.g. a forced final answer)."""

FaultKind = Literal["status", "malformed_json", "broken_stream", "stream_error"]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)


def _where(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _as_dict(part: object, *names: str) -> dict[str, Any]:
    """The named fields of a script part in the JSON form from_dict reads back; nested parts become dicts."""
    return {name: _plain(getattr(part, name)) for name in names}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value.to_dict() if hasattr(value, "to_dict") else value


_T = TypeVar("_T")


def _parse_each(items: list[Any], parse: Callable[[object, str], _T], where: str, key: str) -> tuple[_T, ...]:
    """Each item of the list at `key` parsed; an error names the item's place (``turns[2]``)."""
    return tuple(parse(item, f"{_where(where, key)}[{i}]") for i, item in enumerate(items))


def _check_keys(data: object, allowed: frozenset[str], where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ValueError(f"{where or 'script'}: expected an object, got {type(data).__name__}")
    unknown = sorted(str(key) for key in data if key not in allowed)
    if unknown:
        raise ValueError(
            f"{_where(where, unknown[0])}: unknown field (allowed: {', '.join(sorted(allowed))})"
        )
    return cast(Mapping[str, Any], data)


def _get_str(data: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        expected = "a string" if key in data or default is None else "a string (required)"
        raise ValueError(f"{_where(where, key)}: expected {expected}, got {type(value).__name__}")
    return value


def _get_optional_str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{_where(where, key)}: expected a string or null, got {type(value).__name__}")
    return value


def _get_number(data: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{_where(where, key)}: expected a non-negative number, got {value!r}")
    return float(value)


def _get_int(data: Mapping[str, Any], key: str, where: str, default: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{_where(where, key)}: expected an integer, got {value!r}")
    return value


def _get_list(data: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list | tuple):
        raise ValueError(f"{_where(where, key)}: expected a list, got {type(value).__name__}")
    return list(value)


@dataclass(frozen=True, slots=True)
class ScriptedToolCall:
    """One tool call the model makes; a string ``arguments`` is sent verbatim, even if it is not JSON."""

    name: str
    arguments: dict[str, Any] | str
    id: str | None = None

    _FIELDS = frozenset({"name", "arguments", "id"})

    def arguments_json(self) -> str:
        """The arguments as they go on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: object, where: str = "tool_call") -> ScriptedToolCall:
        fields = _check_keys(data, cls._FIELDS, where)
        name = _get_str(fields, "name", where)
        if not name:
            raise ValueError(f"{_where(where, 'name')}: must not be empty")
        arguments = fields.get("arguments", {})
        if not isinstance(arguments, dict | str):
            got = type(arguments).__name__
            raise ValueError(f"{_where(where, 'arguments')}: expected an object or a string, got {got}")
        return cls(name=name, arguments=arguments, id=_get_optional_str(fields, "id", where))

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, "name", "arguments", "id")


@dataclass(frozen=True, slots=True)
class Turn:
    """One assistant reply. ``finish_reason`` left as None becomes "tool_calls" or "stop".

    With ``replay`` the reply is that recorded HTTP answer, sent as it is (streamed or not,
    whatever the request asked); the other fields are then unused.
    """

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    finish_reason: str | None = None
    replay: Recording | None = None

    _FIELDS = frozenset({"content", "reasoning", "tool_calls", "finish_reason", "replay"})

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.finish_reason is None:
            object.__setattr__(self, "finish_reason", "tool_calls" if self.tool_calls else "stop")

    @classmethod
    def from_dict(cls, data: object, where: str = "turn") -> Turn:
        """Parse a turn; a bare string is shorthand for a turn that only says that text."""
        if isinstance(data, str):
            return cls(content=data)
        fields = _check_keys(data, cls._FIELDS, where)
        calls = _get_list(fields, "tool_calls", where)
        return cls(
            content=_get_str(fields, "content", where, ""),
            reasoning=_get_str(fields, "reasoning", where, ""),
            tool_calls=_parse_each(calls, ScriptedToolCall.from_dict, where, "tool_calls"),
            finish_reason=_get_optional_str(fields, "finish_reason", where),
            replay=Recording.from_dict(fields["replay"], _where(where, "replay"))
            if fields.get("replay") is not None
            else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, "content", "reasoning", "tool_calls", "finish_reason", "replay")


@dataclass(frozen=True, slots=True)
class Scenario:
    """The turns to play when ``match`` (a case-insensitive regex) is found in the last user message."""

    match: str
    turns: tuple[Turn, ...]
    final_text: str | None = None
    name: str = ""
    ignore_tool_choice: bool = False
    """Play tool-call turns even when the request disables tools: a model that will not stop."""
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    _FIELDS = frozenset({"match", "turns", "final_text", "name", "ignore_tool_choice"})

    def __post_init__(self) -> None:
        object.__setattr__(self, "turns", tuple(self.turns))
        if not self.turns:
            raise ValueError(f"scenario {self.name or self.match!r}: turns must not be empty")
        try:
            pattern = re.compile(self.match, re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"match: invalid regular expression {self.match!r}: {exc}") from exc
        object.__setattr__(self, "_pattern", pattern)

    def matches(self, text: str) -> bool:
        return self._pattern.search(text) is not None

    @classmethod
    def from_dict(cls, data: object, where: str = "scenario") -> Scenario:
        fields = _check_keys(data, cls._FIELDS, where)
        match = _get_str(fields, "match", where, "")
        turns = _get_list(fields, "turns", where)
        if not turns:
            raise ValueError(f"{_where(where, 'turns')}: must hold at least one turn")
        try:
            re.compile(match)
        except re.error as exc:
            raise ValueError(f"{_where(where, 'match')}: invalid regular expression: {exc}") from exc
        return cls(
            match=match,
            turns=_parse_each(turns, Turn.from_dict, where, "turns"),
            final_text=_get_optional_str(fields, "final_text", where),
            name=_get_str(fields, "name", where, ""),
            ignore_tool_choice=bool(fields.get("ignore_tool_choice", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, "name", "match", "turns", "final_text", "ignore_tool_choice")


ECHO_SCENARIO = Scenario(match="", turns=(Turn(content="You said: {{user}}"),), name="echo")
"""Played when no scenario matches, so an unscripted question still gets a predictable answer."""


@dataclass(frozen=True, slots=True)
class Latency:
    """Simulated model speed. Zero (the default) adds no sleeps at all.

    ``response_ms`` passes before the response starts; in a stream ``first_token_ms`` passes before
    the first generated piece and ``per_token_ms`` before each further one. A non-streamed
    response waits for the sum the equivalent stream would have taken.
    """

    first_token_ms: float = 0
    per_token_ms: float = 0
    response_ms: float = 0

    _FIELDS = frozenset({"first_token_ms", "per_token_ms", "response_ms"})

    @property
    def is_zero(self) -> bool:
        return not (self.first_token_ms or self.per_token_ms or self.response_ms)

    def seconds_for(self, tokens: int) -> float:
        """How long an answer of ``tokens`` pieces takes to arrive whole, streamed or not.

        The floor under a call's latency, so benchmarks can tell the model's time from their own.
        """
        generation = self.first_token_ms + self.per_token_ms * (tokens - 1) if tokens else 0.0
        return (self.response_ms + generation) / 1000

    @classmethod
    def from_dict(cls, data: object, where: str = "latency") -> Latency:
        fields = _check_keys(data, cls._FIELDS, where)
        return cls(
            first_token_ms=_get_number(fields, "first_token_ms", where, 0),
            per_token_ms=_get_number(fields, "per_token_ms", where, 0),
            response_ms=_get_number(fields, "response_ms", where, 0),
        )

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, "first_token_ms", "per_token_ms", "response_ms")


@dataclass(frozen=True, slots=True)
class Fault:
    """A failure injected into the next ``times`` model requests (either endpoint), server-wide, in order."""

    kind: FaultKind
    status: int = 500
    times: int = 1
    message: str = ""

    _FIELDS = frozenset({"kind", "status", "times", "message"})

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"kind: expected one of {', '.join(FAULT_KINDS)}, got {self.kind!r}")
        if self.kind in ("status", "stream_error") and not 400 <= self.status <= 599:
            raise ValueError(f"status: expected an HTTP error status (400-599), got {self.status}")
        if self.times < 1:
            raise ValueError(f"times: expected at least 1, got {self.times}")

    @classmethod
    def from_dict(cls, data: object, where: str = "fault") -> Fault:
        fields = _check_keys(data, cls._FIELDS, where)
        kind = _get_str(fields, "kind", where)
        if kind not in FAULT_KINDS:
            raise ValueError(
                f"{_where(where, 'kind')}: expected one of {', '.join(FAULT_KINDS)}, got {kind!r}"
            )
        try:
            return cls(
                kind=cast(FaultKind, kind),
                status=_get_int(fields, "status", where, 500),
                times=_get_int(fields, "times", where, 1),
                message=_get_str(fields, "message", where, ""),
            )
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, "kind", "status", "times", "message")


@dataclass(frozen=True, slots=True)
class Script:
    """Everything a scripted model does: its scenarios, its speed and the failures it injects."""

    scenarios: tuple[Scenario, ...] = ()
    latency: Latency = Latency()
    faults: tuple[Fault, ...] = ()

    _FIELDS = frozenset({"scenarios", "latency", "faults"})

    def __post_init__(self) -> None:
        object.__setattr__(self, "scenarios", tuple(self.scenarios))
        object.__setattr__(self, "faults", tuple(self.faults))

    @classmethod
    def from_dict(cls, data: object) -> Script:
        fields = _check_keys(data, cls._FIELDS, "")
        scenarios = _get_list(fields, "scenarios", "")
        faults = _get_list(fields, "faults", "")
        return cls(
            scenarios=_parse_each(scenarios, Scenario.from_dict, "", "scenarios"),
            latency=Latency.from_dict(fields.get("latency", {}), "latency"),
            faults=_parse_each(faults, Fault.from_dict, "", "faults"),
        )

    @classmethod
    def from_json_file(cls, path: str | os.PathLike[str]) -> Script:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{os.fspath(path)}: not valid JSON: {exc}") from exc
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, "scenarios", "latency", "faults")

    def scenario_for(self, user_text: str) -> Scenario:
        """First scenario whose regex is found in ``user_text``; the echo scenario otherwise."""
        for scenario in self.scenarios:
            if scenario.matches(user_text):
                return scenario
        return ECHO_SCENARIO

    def select(self, messages: Sequence[Mapping[str, Any]], tools_offered: bool) -> Turn:
        """The fully resolved turn (templates filled, tool call ids set) that answers ``messages``.

        The turn index is the number of assistant messages after the last user message, so an
        agent loop advances through the scenario one model call at a time; past the end the last
        turn repeats, which is how a model that never stops calling tools is scripted.
        """
        user_at = last_user_index(messages)
        user_text = message_text(messages[user_at]) if user_at >= 0 else ""
        scenario = self.scenario_for(user_text)
        index = sum(1 for message in messages[user_at + 1 :] if message.get("role") == "assistant")
        turn = scenario.turns[min(index, len(scenario.turns) - 1)]
        if turn.replay is not None:
            return turn

        if turn.tool_calls and not tools_offered and not scenario.ignore_tool_choice:
            final = scenario.final_text if scenario.final_text is not None else DEFAULT_FINAL_TEXT
            return Turn(content=render(final, messages), reasoning=turn.reasoning)

        content = render(turn.content, messages)
        if content is turn.content and all(call.id is not None for call in turn.tool_calls):
            return turn
        user_turns = sum(1 for message in messages if message.get("role") == "user")
        calls = tuple(
            call
            if call.id is not None
            else ScriptedToolCall(
                call.name, call.arguments, tool_call_id(scenario, index, i, call.name, user_turns)
            )
            for i, call in enumerate(turn.tool_calls)
        )
        return Turn(
            content=content, reasoning=turn.reasoning, tool_calls=calls, finish_reason=turn.finish_reason
        )


def tool_call_id(scenario: Scenario, turn_index: int, position: int, name: str, user_turns: int = 0) -> str:
    """A deterministic id that differs per turn and per position, and per user turn via the hash.

    Deterministic ids make recorded conversations diff cleanly between runs.
    """
    seed = f"{scenario.name or scenario.match}\x00{name}\x00{user_turns}".encode()
    return f"call_{turn_index}_{position}_{hashlib.sha1(seed).hexdigest()[:8]}"
