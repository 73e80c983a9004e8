"""Checks on Run/Invoke requests, done before a run starts.

Every failure names the field that is wrong (INVALID_ARGUMENT "options.max_steps:
must be ..."), so a client in any language can tell what to fix.
"""

from __future__ import annotations

import json
import math

from agentloop.kernel.errors import InvalidArgument
from agentloop.kernel.jsonlimits import JsonLimitError, check_bounds, loads_bounded
from agentloop.kernel.settings import MIN_CONTEXT_BUDGET_TOKENS, GatewaySettings
from agentloop.kernel.untrusted_schema import SchemaRefused, check_schema
from agentloop.kernel.wellknown import seconds, struct_to_dict
from agentloop.v1 import agent_pb2, common_pb2
from gateway.journal.state import RunConfig
from gateway.policies.hooks import HookRegistry
from gateway.policies.loop_detection import MAX_PERIOD_LIMIT, LoopSettings
from gateway.store.storable import check_storable

MAX_STEPS_LIMIT = 1000
MAX_INPUT_CHARS = 1_000_000
MAX_HISTORY_MESSAGES = 10_000
MAX_TOOL_TIMEOUT_S = 3600.0
_HISTORY_ROLES = (common_pb2.ROLE_USER, common_pb2.ROLE_ASSISTANT, common_pb2.ROLE_TOOL)

RunLikeRequest = agent_pb2.RunRequest | agent_pb2.InvokeRequest
MAX_SCHEMA_BYTES = 256 * 1024


def _output_schema(options: agent_pb2.RunOptions) -> dict[str, object] | None:
    if not options.HasField("output_schema"):
        return None
    if options.output_schema.ByteSize() > MAX_SCHEMA_BYTES:
        raise InvalidArgument("options.output_schema", f"is larger than {MAX_SCHEMA_BYTES} bytes")
    schema = struct_to_dict(options.output_schema)
    try:
        check_schema(schema)  # nothing it refers to is fetched or read (agentloop.kernel.untrusted_schema)
    except SchemaRefused as exc:
        raise InvalidArgument("options.output_schema", str(exc)) from None
    return schema


def _loop_settings(options: agent_pb2.LoopDetection, settings: GatewaySettings) -> LoopSettings:
    # The similarity fields are deprecated and ignored, but still range-checked: a request
    # that was refused before is refused now.
    for name in ("args_similarity", "result_similarity"):
        value = getattr(options, name)
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise InvalidArgument(f"options.loop_detection.{name}", "must be between 0 and 1")
    if not 0 <= options.max_period <= MAX_PERIOD_LIMIT:
        raise InvalidArgument(
            "options.loop_detection.max_period", f"must be between 1 and {MAX_PERIOD_LIMIT}"
        )
    return LoopSettings.from_proto(options, settings.loop_policies)


MAX_CONTEXT_BUDGET_TOKENS = 10_000_000
MAX_SUMMARY_PROMPT_CHARS = 8000


def _context_budget(options: agent_pb2.RunOptions, settings: GatewaySettings) -> tuple[int, int]:
    """(budget, recent window kept verbatim) of a run, checked against each other."""
    requested = options.context_budget_tokens
    if requested != 0 and not MIN_CONTEXT_BUDGET_TOKENS <= requested <= MAX_CONTEXT_BUDGET_TOKENS:
        # Below the minimum not even a summary fits: every model call would be cut to nothing.
        raise InvalidArgument(
            "options.context_budget_tokens",
            f"must be 0 (the gateway's default) or between {MIN_CONTEXT_BUDGET_TOKENS} and "
            f"{MAX_CONTEXT_BUDGET_TOKENS}; a smaller budget leaves no room for a summary",
        )
    budget = options.context_budget_tokens or settings.context_budget_tokens
    keep = options.context_keep_recent_tokens
    if keep < 0 or (keep and budget and keep >= budget):
        raise InvalidArgument(
            "options.context_keep_recent_tokens", f"must be between 0 and the budget ({budget}), exclusive"
        )
    if len(options.context_summary_prompt) > MAX_SUMMARY_PROMPT_CHARS:
        raise InvalidArgument(
            "options.context_summary_prompt", f"must be at most {MAX_SUMMARY_PROMPT_CHARS} characters"
        )
    return budget, keep


def _check_options(options: agent_pb2.RunOptions) -> None:
    """The options' own ranges, each refusal naming its field.

    Unknown enum values and malformed Durations never get here: every
    server refuses them when the request arrives (agentloop.kernel.request_checks).
    """
    if not 0 <= options.max_steps <= MAX_STEPS_LIMIT:
        raise InvalidArgument("options.max_steps", f"must be between 1 and {MAX_STEPS_LIMIT} (0 = default)")
    timeout = seconds(options.tool_timeout)
    if not 0 <= timeout <= MAX_TOOL_TIMEOUT_S:
        raise InvalidArgument("options.tool_timeout", f"must be between 0s and {MAX_TOOL_TIMEOUT_S:g}s")
    if options.HasField("temperature"):
        temperature = options.temperature
        if math.isnan(temperature) or not 0.0 <= temperature <= 2.0:
            raise InvalidArgument("options.temperature", "must be between 0 and 2")
    for field in ("tools", "require_approval"):
        for i, name in enumerate(getattr(options, field)):
            if not name:
                raise InvalidArgument(f"options.{field}[{i}]", "must not be empty")


def run_config(
    options: agent_pb2.RunOptions, settings: GatewaySettings, hooks: HookRegistry | None = None
) -> RunConfig:
    """Validated per-run settings with the gateway's defaults filled in.

    Called once when a run is created; the result's wire form
    (`resolved_options`) is stored with the run, so a gateway that resumes or
    adopts it reads the same limits whatever its own defaults are.
    """
    _check_options(options)
    budget, keep = _context_budget(options, settings)
    registry = hooks or HookRegistry()
    return RunConfig(
        system_prompt=options.system_prompt or settings.system_prompt,
        max_steps=options.max_steps or settings.max_steps,
        stream_mode=options.stream_mode or agent_pb2.STREAM_MODE_FINAL_ONLY,
        model=options.model,
        tool_names=tuple(options.tools),
        tool_timeout_s=seconds(options.tool_timeout),
        temperature=options.temperature if options.HasField("temperature") else None,
        context_budget_tokens=budget,
        context_keep_recent_tokens=keep,
        context_summary_prompt=options.context_summary_prompt,
        session_memory=options.session_memory and not options.disable_memory,
        cancel_on_disconnect=options.cancel_on_disconnect,
        loops=_loop_settings(options.loop_detection, settings),
        output_schema=_output_schema(options),
        serial_tools=options.serial_tools,
        require_approval=frozenset(options.require_approval),
        hooks=registry.select(options.hooks, "options.hooks"),
        memory=not options.disable_memory,
        flow_guidance=not options.disable_flow_guidance,
        max_tool_calls_per_step=settings.max_tool_calls_per_step,
        max_argument_bytes=settings.max_argument_bytes,
    )


def resolved_options(options: agent_pb2.RunOptions, config: RunConfig) -> agent_pb2.RunOptions:
    """`options` with every gateway default that `config` filled in written out: the run's stored form.

    `run_config` of the result gives `config` back on any gateway (except the
    gateway-wide limits RunOptions has no field for: tool calls per step,
    argument bytes and per-tool loop policies).
    """
    resolved = agent_pb2.RunOptions()
    resolved.CopyFrom(options)
    resolved.system_prompt = config.system_prompt
    resolved.max_steps = config.max_steps
    resolved.stream_mode = agent_pb2.StreamMode.ValueType(config.stream_mode)
    resolved.context_budget_tokens = config.context_budget_tokens
    resolved.loop_detection.disabled = not config.loops.enabled
    resolved.loop_detection.max_period = config.loops.max_period
    resolved.hooks[:] = [hook.name for hook in config.hooks]
    return resolved


def check_decisions(
    decisions: list[agent_pb2.ApprovalDecision], pending: set[str]
) -> dict[str, agent_pb2.ApprovalDecision]:
    """A Resume's decisions, checked against the paused run's `pending` call ids; by call id."""
    out: dict[str, agent_pb2.ApprovalDecision] = {}
    for i, decision in enumerate(decisions):
        field = f"decisions[{i}]"
        if decision.tool_call_id not in pending:
            raise InvalidArgument(f"{field}.tool_call_id", f"{decision.tool_call_id!r} is not a pending call")
        if decision.tool_call_id in out:
            # Two verdicts for one call: neither may silently win.
            first = next(j for j, d in enumerate(decisions) if d.tool_call_id == decision.tool_call_id)
            raise InvalidArgument(
                f"{field}.tool_call_id",
                f"{decision.tool_call_id!r} already has a decision (decisions[{first}]); give one per call",
            )
        if decision.verdict == agent_pb2.ApprovalDecision.VERDICT_UNSPECIFIED:
            raise InvalidArgument(f"{field}.verdict", "must be APPROVE, REJECT or EDIT")
        if decision.verdict not in agent_pb2.ApprovalDecision.Verdict.values():
            raise InvalidArgument(f"{field}.verdict", f"unknown value {decision.verdict}")
        if decision.verdict == agent_pb2.ApprovalDecision.VERDICT_EDIT:
            _check_edited_arguments(decision.arguments_json, f"{field}.arguments_json")
        out[decision.tool_call_id] = decision
    return out


def _check_edited_arguments(text: str, field: str) -> None:
    try:
        edited = json.loads(check_bounds(text, what=field))
    except JsonLimitError as exc:
        raise InvalidArgument(exc.what, exc.problem) from None
    except ValueError as exc:
        raise InvalidArgument(field, f"is not valid JSON: {exc}") from None
    if not isinstance(edited, dict):
        raise InvalidArgument(field, "must be a JSON object")


def new_turn_messages(request: RunLikeRequest) -> list[common_pb2.Message]:
    """What a run adds to its thread: the seed history (new threads only) and the question, checked."""
    if not request.input.strip():
        raise InvalidArgument("input", "must not be empty")
    if len(request.input) > MAX_INPUT_CHARS:
        raise InvalidArgument("input", f"is longer than {MAX_INPUT_CHARS} characters")
    if len(request.history) > MAX_HISTORY_MESSAGES:
        raise InvalidArgument("history", f"has more than {MAX_HISTORY_MESSAGES} messages")
    _check_storable_text(request)
    open_calls: set[str] = set()
    for i, msg in enumerate(request.history):
        if msg.role not in _HISTORY_ROLES:
            raise InvalidArgument(f"history[{i}].role", "must be user, assistant or tool")
        if msg.role == common_pb2.ROLE_TOOL:
            if msg.tool_call_id not in open_calls:
                raise InvalidArgument(
                    f"history[{i}].tool_call_id", "must answer a tool call of an earlier assistant message"
                )
            open_calls.discard(msg.tool_call_id)
        elif open_calls:
            raise InvalidArgument(
                f"history[{i}]", "tool calls of the previous assistant message lack results"
            )
        for j, call in enumerate(msg.tool_calls):
            if msg.role != common_pb2.ROLE_ASSISTANT:
                raise InvalidArgument(f"history[{i}].tool_calls", "only assistant messages may call tools")
            if not call.id or not call.name:
                raise InvalidArgument(f"history[{i}].tool_calls[{j}]", "needs an id and a name")
            _check_provider_fields(
                f"history[{i}].tool_calls[{j}].provider_fields_json", call.provider_fields_json
            )
            open_calls.add(call.id)
        _check_provider_fields(f"history[{i}].provider_fields_json", msg.provider_fields_json)
    if open_calls:
        raise InvalidArgument("history", "ends with tool calls that have no results")
    question = common_pb2.Message(role=common_pb2.ROLE_USER, content=request.input)
    return [*request.history, question]


def _check_provider_fields(field: str, text: str) -> None:
    """Provider fields go back to the model merged into the message: they must be a JSON object."""
    if not text:
        return
    try:
        value = loads_bounded(text, what="provider fields")
    except JsonLimitError as exc:
        raise InvalidArgument(field, exc.problem) from None
    except ValueError as exc:
        raise InvalidArgument(field, f"is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidArgument(field, "must be a JSON object")


def _check_storable_text(request: RunLikeRequest) -> None:
    """The question and the seed history hold only text both databases can store (no NUL).

    Refused rather than repaired: it is the client's own text, and a fact
    remembered from it ("remember that …") goes to a text column as is.
    """
    check_storable("input", request.input)
    for i, msg in enumerate(request.history):
        for name in ("content", "tool_call_id", "name"):
            check_storable(f"history[{i}].{name}", getattr(msg, name))
        for j, call in enumerate(msg.tool_calls):
            for name in ("id", "name", "arguments_json"):
                check_storable(f"history[{i}].tool_calls[{j}].{name}", getattr(call, name))
