"""Tools, the ``@tool`` decorator and the registry the ToolService serves from.

A Tool is built once, at registration: its schema, its jsonschema validator and
its argument converters are all prepared then, so that a call only pays for
parsing and validating its own arguments. Anything wrong with a tool's
definition fails registration loudly instead of failing calls later.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar, overload

from jsonschema import ValidationError

from agentloop.kernel.jsonlimits import JsonLimitError, json_kind, loads_bounded
from agentloop.kernel.loop_policy import LoopPolicy
from agentloop.kernel.untrusted_schema import SchemaRefused, compile_schema
from agentloop.v1 import common_pb2
from tool_svc.schema import FunctionSchema, function_schema

F = TypeVar("F", bound=Callable[..., Any])

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_REPORTED_ERRORS = 5
_MAX_ERROR_CHARS = 300
_OPTIONS_ATTR = "__agentloop_tool__"
NEXT_STEP_ON = ("success", "error")
NEXT_STEP_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_HINT_CHARS = 1000

ErrorKind: TypeAlias = common_pb2.ToolErrorKind.ValueType


@dataclass(frozen=True, slots=True)
class NextStep:
    """A flow-guidance rule: what the model should do next after the tool succeeds or fails.

    The gateway turns the rule matching a call's outcome into a one-time hint
    for the model. ``on`` is "success" or "error"; ``next_step`` is a short
    name for the step (for example "run_sql"); ``hint`` is the text the model
    reads. A tool has at most one rule per ``on``.
    """

    on: Literal["success", "error"]
    next_step: str
    hint: str

    def __post_init__(self) -> None:
        _check_next_step(self)

    def to_proto(self) -> common_pb2.NextStepRule:
        """The rule as published in ToolSpec.next_steps."""
        trigger = (
            common_pb2.NEXT_STEP_TRIGGER_ERROR if self.on == "error" else common_pb2.NEXT_STEP_TRIGGER_SUCCESS
        )
        return common_pb2.NextStepRule(trigger=trigger, next_step=self.next_step, hint=self.hint)


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What the executor tells a tool about the call it is serving.

    Declare a parameter of this type to receive it; it never appears in the
    schema and the model cannot set it. ``idempotency_key`` ("<run>/<step>:<call id>"
    when the gateway sends a scope, else the call id) is stable across retries
    and crash recovery of the same model turn, so tools with side effects can
    use it to do their work once.
    """

    tool_call_id: str
    tool_name: str
    timeout_s: float
    idempotency_key: str = ""


@dataclass(frozen=True, slots=True)
class ToolOptions:
    """Overrides given to ``@tool(...)``; None means "derive it from the function"."""

    name: str | None = None
    description: str | None = None
    timeout_s: float | None = None
    next_steps: tuple[NextStep, ...] = ()
    requires_approval: bool = False
    loop_policy: LoopPolicy | None = None


class ArgumentError(Exception):
    """The model's arguments for a call are unusable; ``message`` is written for the model."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class ResultTooLarge(Exception):
    """A tool's result is over what may be returned; the executor makes it a TOO_LARGE error result.

    For tools that learn the size before holding the result (an MCP server's
    reply refused by the transport); ``size`` is the size in bytes, or a lower bound.
    """

    def __init__(self, size: int) -> None:
        super().__init__(f"the result is {size} bytes or more")
        self.size = size


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = None,
    next_steps: Iterable[NextStep] = (),
    requires_approval: bool = False,
    loop_policy: LoopPolicy | None = None,
) -> Callable[[F], F]: ...
def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = None,
    next_steps: Iterable[NextStep] = (),
    requires_approval: bool = False,
    loop_policy: LoopPolicy | None = None,
) -> F | Callable[[F], F]:
    """Mark a function as a tool, optionally overriding its name, description or timeout.

    ``next_steps`` are flow-guidance rules published with the tool (see
    NextStep); ``requires_approval`` tells the gateway to wait for a human
    decision before running a call of it; ``loop_policy`` tells loop detection
    what it cannot guess (a poll tool's expected repeats, arguments that do not
    matter, volatile result fields). The function itself is returned
    unchanged (still directly callable and testable); the registry reads the
    attached options when it registers it.
    """
    if timeout_s is not None and not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
    options = ToolOptions(
        name=name,
        description=description,
        timeout_s=timeout_s,
        next_steps=check_next_steps(next_steps),
        requires_approval=_check_flag(requires_approval),
        loop_policy=_check_loop_policy(loop_policy),
    )

    def mark(target: F) -> F:
        setattr(target, _OPTIONS_ATTR, options)
        return target

    return mark if fn is None else mark(fn)


def tool_options(obj: object) -> ToolOptions | None:
    """The ``@tool`` options of ``obj``, or None when it was not decorated."""
    options = getattr(obj, _OPTIONS_ATTR, None)
    return options if isinstance(options, ToolOptions) else None


def check_next_steps(rules: Iterable[NextStep]) -> tuple[NextStep, ...]:
    """Validate a tool's rules: NextStep instances, valid fields, at most one per ``on``."""
    if isinstance(rules, (str, bytes, NextStep)):
        raise TypeError(f"next_steps must be a list of NextStep, got {type(rules).__name__}")
    checked = tuple(rules)
    seen: set[str] = set()
    for rule in checked:
        if not isinstance(rule, NextStep):
            raise TypeError(f"next_steps must contain NextStep instances, got {type(rule).__name__}")
        _check_next_step(rule)
        if rule.on in seen:
            raise ValueError(f"next_steps has more than one rule for on={rule.on!r}")
        seen.add(rule.on)
    return checked


def _check_next_step(rule: NextStep) -> None:
    if rule.on not in NEXT_STEP_ON:
        raise ValueError(f"NextStep.on must be 'success' or 'error', got {rule.on!r}")
    if not isinstance(rule.next_step, str) or not NEXT_STEP_PATTERN.fullmatch(rule.next_step):
        raise ValueError(f"NextStep.next_step must match {NEXT_STEP_PATTERN.pattern}, got {rule.next_step!r}")
    if not isinstance(rule.hint, str) or not rule.hint.strip():
        raise ValueError(f"NextStep.hint must be a non-empty string (next_step {rule.next_step!r})")
    if len(rule.hint) > MAX_HINT_CHARS:
        raise ValueError(
            f"NextStep.hint is {len(rule.hint)} characters long; the limit is {MAX_HINT_CHARS} "
            f"(next_step {rule.next_step!r})"
        )


def _check_loop_policy(value: object) -> LoopPolicy | None:
    if value is not None and not isinstance(value, LoopPolicy):
        raise TypeError(f"loop_policy must be a LoopPolicy, got {type(value).__name__}")
    return value


def _check_flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"requires_approval must be a bool, got {type(value).__name__}")
    return value


class Tool:
    """One registered tool: metadata, precompiled validation and the way to call it."""

    __slots__ = (
        "_converters",
        "_implicit_none",
        "_property_names",
        "_schema_json",
        "_validator",
        "context_param",
        "description",
        "fn",
        "injected",
        "is_async",
        "loop_policy",
        "name",
        "next_steps",
        "parameters",
        "requires_approval",
        "timeout_s",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout_s: float | None = None,
        next_steps: Iterable[NextStep] | None = None,
        requires_approval: bool | None = None,
        loop_policy: LoopPolicy | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> None:
        options = tool_options(fn) or ToolOptions()
        self.fn = fn
        self.name: str = name or options.name or str(getattr(fn, "__name__", ""))
        if not NAME_PATTERN.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must match {NAME_PATTERN.pattern}")
        # With ``parameters`` (a tool defined elsewhere, such as an MCP server's) that JSON schema is
        # the contract and ``fn`` receives the validated arguments as keywords, unconverted.
        derived = function_schema(fn, ToolContext) if parameters is None else _external_schema(parameters)
        self.description = description or options.description or derived.description
        self.timeout_s = timeout_s if timeout_s is not None else options.timeout_s
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ValueError(f"tool {self.name!r}: timeout_s must be > 0, got {self.timeout_s!r}")
        self._set_policies(options, next_steps, requires_approval, loop_policy)
        self.parameters = derived.parameters
        self.context_param = derived.context_param
        # (parameter name, injected kind) of each parameter the executor fills from the run.
        self.injected: tuple[tuple[str, str], ...] = derived.injected
        self.is_async = inspect.iscoroutinefunction(fn)
        self._converters = derived.converters
        self._implicit_none = derived.implicit_none
        self._property_names = ", ".join(derived.parameters["properties"]) or "(none)"
        self._schema_json = json.dumps(derived.parameters, ensure_ascii=False)
        # A schema written elsewhere (an MCP server's, a tool module's) may refer to anything: it is
        # refused unless every reference stays inside it, and bounded as the Reasoner will parse it.
        try:
            self._validator = compile_schema(derived.parameters)
        except SchemaRefused as exc:
            raise ValueError(f"tool {self.name!r}: its parameters schema {exc}") from None

    def _set_policies(
        self,
        options: ToolOptions,
        next_steps: Iterable[NextStep] | None,
        requires_approval: bool | None,
        loop_policy: LoopPolicy | None,
    ) -> None:
        """Next steps, approval and loop policy: an argument given here overrides the decorator's.

        A bad value names the tool, since registration errors are read far
        from the function that caused them.
        """
        try:
            self.next_steps = check_next_steps(options.next_steps if next_steps is None else next_steps)
            self.requires_approval = _check_flag(
                options.requires_approval if requires_approval is None else requires_approval
            )
            self.loop_policy = _check_loop_policy(options.loop_policy if loop_policy is None else loop_policy)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"tool {self.name!r}: {exc}") from None

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, fn={self.fn!r})"

    def spec(self) -> common_pb2.ToolSpec:
        """The tool as the model is offered it."""
        return common_pb2.ToolSpec(
            name=self.name,
            description=self.description,
            parameters_json_schema=self._schema_json,
            next_steps=[rule.to_proto() for rule in self.next_steps],
            injected_parameters=[param for param, _kind in self.injected],
            requires_approval=self.requires_approval,
            loop_policy=None if self.loop_policy is None else self.loop_policy.to_proto(),
        )

    def bind(self, arguments_json: str) -> dict[str, Any]:
        """Parse, validate and convert one call's arguments into keyword arguments.

        Raises ArgumentError (MALFORMED_ARGUMENTS or INVALID_ARGUMENTS) with a
        message that tells the model exactly what to fix.
        """
        arguments = self._parse(arguments_json)
        try:
            errors = self._validator.errors(arguments)
        except SchemaRefused as exc:
            raise ArgumentError(
                common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS,
                f"the arguments of {self.name} could not be checked against its schema: {exc}",
            ) from None
        if errors:
            raise ArgumentError(common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS, self._describe_errors(errors))
        for key in self._implicit_none:
            arguments.setdefault(key, None)
        for key, convert in self._converters:
            if key in arguments:
                try:
                    arguments[key] = convert(arguments[key])
                except (OverflowError, ValueError, TypeError) as exc:
                    raise ArgumentError(
                        common_pb2.TOOL_ERROR_KIND_INVALID_ARGUMENTS,
                        f"$.{key}: cannot be used as given ({exc})",
                    ) from None
        return arguments

    def _parse(self, arguments_json: str) -> dict[str, Any]:
        if not arguments_json:
            return {}
        try:
            arguments = loads_bounded(arguments_json, what="arguments")
        except JsonLimitError as exc:
            raise ArgumentError(
                common_pb2.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS,
                f"{exc}; send one flat JSON object with the properties: {self._property_names}",
            ) from None
        except json.JSONDecodeError as exc:
            raise ArgumentError(
                common_pb2.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS,
                f"arguments are not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}; "
                f"send one JSON object with the properties: {self._property_names}",
            ) from None
        except (ValueError, RecursionError) as exc:
            # Python's json refuses integers of thousands of digits and very deep nesting.
            raise ArgumentError(
                common_pb2.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS,
                f"arguments could not be read as JSON ({type(exc).__name__}: {str(exc)[:200]}); "
                f"send one JSON object with the properties: {self._property_names}",
            ) from None
        if not isinstance(arguments, dict):
            raise ArgumentError(
                common_pb2.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS,
                f"arguments must be a JSON object, got {json_kind(arguments)}; "
                f"send one JSON object with the properties: {self._property_names}",
            )
        return arguments

    async def invoke(self, kwargs: dict[str, Any]) -> Any:
        """Call the function; sync functions run in a worker thread so they never block the loop.

        A sync tool cancelled by a timeout keeps running in its thread (threads
        cannot be killed); its eventual result is discarded.
        """
        if self.is_async:
            return await self.fn(**kwargs)
        return await asyncio.to_thread(self.fn, **kwargs)

    def _describe_errors(self, errors: list[ValidationError]) -> str:
        problems = sorted({problem for error in errors for problem in _problems(error)})
        shown = problems[:MAX_REPORTED_ERRORS]
        lines = [f"invalid arguments for {self.name}:", *(f"- {path}: {message}" for path, message in shown)]
        if len(problems) > len(shown):
            lines.append(f"- ... and {len(problems) - len(shown)} more")
        return "\n".join(lines)


def _problems(error: ValidationError) -> list[tuple[str, str]]:
    """(JSON path, message) pairs for one validation error, phrased for the model."""
    path = error.json_path
    if error.validator == "required" and isinstance(error.instance, dict):
        required = error.validator_value if isinstance(error.validator_value, list) else []
        missing = [name for name in required if name not in error.instance]
        return [(f"{path}.{name}", "is required") for name in missing]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        unknown = [repr(key) for key in error.instance if key not in known]
        noun = "property" if len(unknown) == 1 else "properties"
        allowed = ", ".join(known) or "(none)"
        return [(path, f"unknown {noun} {', '.join(unknown)}; allowed properties: {allowed}")]
    message = error.message
    if len(message) > _MAX_ERROR_CHARS:
        message = message[: _MAX_ERROR_CHARS - 3] + "..."
    return [(path, message)]


class ToolRegistry:
    """The tools one ToolService offers, by unique name."""

    def __init__(self, tools: Iterable[Callable[..., Any] | Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._sorted_names: tuple[str, ...] = ()
        self._external: dict[str, tuple[str, ...]] = {}
        for item in tools:
            self.register(item)

    def register(self, fn_or_tool: Callable[..., Any] | Tool) -> Tool:
        """Add a tool (a Tool, or a function with or without ``@tool``); duplicate names are refused."""
        built = fn_or_tool if isinstance(fn_or_tool, Tool) else Tool(fn_or_tool)
        if built.name in self._tools:
            raise ValueError(f"a tool named {built.name!r} is already registered")
        self._tools[built.name] = built
        self._sorted_names = tuple(sorted(self._tools))
        return built

    def set_external(self, source: str, tools: Iterable[Tool]) -> list[str]:
        """Replace the tools registered for ``source`` (an MCP server, say) with ``tools``.

        Sources come and go while the service runs (a server reconnects with a
        different tool list), so this swaps their whole set at once. A tool
        whose name is already taken by another source or a Python tool is left
        out; the names left out are returned for the caller to report.
        """
        for name in self._external.pop(source, ()):
            self._tools.pop(name, None)
        added: list[str] = []
        refused: list[str] = []
        for built in tools:
            if built.name in self._tools:
                refused.append(built.name)
                continue
            self._tools[built.name] = built
            added.append(built.name)
        if added:
            self._external[source] = tuple(added)
        self._sorted_names = tuple(sorted(self._tools))
        return refused

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        """All tool names, sorted."""
        return self._sorted_names

    def specs(self, names: Iterable[str] | None = None) -> list[common_pb2.ToolSpec]:
        """Specs sorted by name; with ``names``, only those (unknown names are ignored)."""
        wanted = None if names is None else set(names)
        return [self._tools[name].spec() for name in self._sorted_names if wanted is None or name in wanted]

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


def _external_schema(parameters: dict[str, Any]) -> FunctionSchema:
    """A FunctionSchema for a tool whose arguments schema was written elsewhere (no converters)."""
    if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
        raise ValueError("a tool's parameters schema must be a JSON object schema of type 'object'")
    normalized = {"type": "object", "properties": {}, **parameters}
    return FunctionSchema("", normalized, (), (), None, ())
