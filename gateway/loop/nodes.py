"""The nodes of the loop: small async functions `(state, ctx) -> Update`.

A node reads the state, talks to one dependency and returns what changed; it
never decides where the run goes next (that is the graph's job, in graph.py).
The tools node lives in acting.py.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from agentloop.kernel.errors import AgentloopError, Reason, reason_of
from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2
from gateway.journal.closing import cancelled_result, tool_message
from gateway.journal.state import (
    RunState,
    StopReason,
    Update,
)
from gateway.loop.acting import tools
from gateway.loop.call_ids import make_call_ids_unique
from gateway.loop.compression import session_summary, summarize, summary_due
from gateway.loop.memory import RECALL_CANDIDATES, memory_instruction, rank
from gateway.loop.run_context import FINAL_ANSWER_TOOL, RunCancelled, RunContext, hook_context
from gateway.policies.context import (
    HEADROOM,
    Calibration,
    estimate_prompt,
    estimate_tool,
    latest_summary,
    summary_range,
    trim,
    view,
)
from gateway.policies.hooks import call_hooks

__all__ = [
    "RunContext",
    "agent",
    "call_model_again",
    "finalize",
    "init_state",
    "memory_trigger",
    "tools",
    "wants_reply_text",
]

PLANNING_TEXT = "planning_text"
"""Decision kind: streamed text of a step that then called tools (not the answer)."""
MODEL_FALLBACK = "model_fallback"
"""Decision kind: the model asked for failed and another answered in its place."""
_TOOL_CHOICE_NONE = common_pb2.ToolChoice(mode=common_pb2.TOOL_CHOICE_MODE_NONE)
_TOOL_CHOICE_REQUIRED = common_pb2.ToolChoice(mode=common_pb2.TOOL_CHOICE_MODE_REQUIRED)
_TOOL_CHOICE_FINISH = common_pb2.ToolChoice(function_name=FINAL_ANSWER_TOOL)
_ASK_FOR_FINAL_ANSWER = (
    "A plain-text answer is not accepted in this conversation: call the final_answer tool with an "
    "object that matches its schema."
)
_ASK_FOR_REPLY_TEXT = (
    "Your final_answer was accepted. Now write the reply to the user in plain text; do not call tools."
)


# --- init_state and memory_trigger -------------------------------------------------


async def init_state(state: RunState, ctx: RunContext) -> Update:
    """Add the new turn (and a new thread's seed history) to the conversation."""
    return Update(messages=list(ctx.new_messages))


async def memory_trigger(state: RunState, ctx: RunContext) -> Update:
    """Store "remember …" instructions as facts for the user; recall facts relevant to the question."""
    if not state.config.memory or ctx.memories is None:
        return Update(recalled=[])
    question = next((m.content for m in reversed(state.messages) if m.role == common_pb2.ROLE_USER), "")
    fact = memory_instruction(question)
    if fact is not None:
        await ctx.memories.add_memory(state.user_id, fact)
        ctx.sink.decision("memory_stored", fact)
    return Update(recalled=await recall(state, ctx, question))


async def recall(state: RunState, ctx: RunContext, question: str) -> list[str]:
    if ctx.memories is None:
        return []
    newest = await ctx.memories.list_memories(state.user_id, limit=RECALL_CANDIDATES)
    facts = [m.text for m in rank(newest, question)]
    if facts:
        ctx.sink.decision("memory_recalled", "; ".join(facts))
    return facts


# --- agent ---------------------------------------------------------------------------


def final_answer_spec(schema: dict[str, Any]) -> common_pb2.ToolSpec:
    """The finish tool of a structured-output run: its arguments ARE the answer."""
    return common_pb2.ToolSpec(
        name=FINAL_ANSWER_TOOL,
        description="Give the final answer: call this once, when you are done, with the answer object.",
        parameters_json_schema=json.dumps(schema),
    )


def _guidance(state: RunState) -> list[common_pb2.Message]:
    """One-time system messages for this call only: recalled facts and the flow-guidance hint."""
    extra = []
    if state.recalled:
        facts = "\n".join(f"- {fact}" for fact in state.recalled)
        extra.append(
            common_pb2.Message(
                role=common_pb2.ROLE_SYSTEM, content=f"Facts the user asked you to remember earlier:\n{facts}"
            )
        )
    if state.hint:
        extra.append(
            common_pb2.Message(
                role=common_pb2.ROLE_SYSTEM,
                content=f"Suggested next step: {state.suggested_next_step}. {state.hint}",
            )
        )
    return extra


def _specs(state: RunState, ctx: RunContext) -> list[common_pb2.ToolSpec]:
    specs = list(ctx.tool_specs)
    if state.config.output_schema is not None:
        specs.append(final_answer_spec(state.config.output_schema))
    return specs


def _prompt(state: RunState, ctx: RunContext, fit: bool = True) -> list[common_pb2.Message]:
    """The messages of the next model call: the summarized view, guidance, cut to the budget if `fit`."""
    messages = view(state.messages)
    extra = _guidance(state)
    if extra:
        messages = [messages[0], *extra, *messages[1:]] if not state.hint else [*messages, *extra]
    budget = state.config.context_budget_tokens
    if fit and budget > 0:
        tools_estimate = sum(estimate_tool(s) for s in _specs(state, ctx))
        room = state.calibration.estimate_for(int(budget * HEADROOM)) - tools_estimate
        # A summary note (the first message after the system ones) stays: it stands for everything older.
        messages = trim(messages, max(1, room), keep_first=1 if latest_summary(state.messages) else 0)
    return messages


async def _params(state: RunState, ctx: RunContext, with_tools: bool) -> reasoner_pb2.CompletionParams:
    cfg = state.config
    messages = _prompt(state, ctx)
    if cfg.hooks:
        messages, changed = await call_hooks(cfg.hooks, "pre_reasoning", hook_context(state), list(messages))
        for name in changed:
            ctx.sink.decision("hook", f"{name} changed the messages sent to the model")
    params = reasoner_pb2.CompletionParams(model=cfg.model, messages=messages)
    specs = _specs(state, ctx)
    if specs:
        # Tools stay declared even when disabled: endpoints need them to read
        # earlier tool calls, and an unchanged prefix keeps prompt caches warm.
        params.tools.extend(specs)
        if cfg.output_schema is not None:
            params.tool_choice.CopyFrom(_TOOL_CHOICE_REQUIRED if with_tools else _TOOL_CHOICE_FINISH)
        elif not with_tools:
            params.tool_choice.CopyFrom(_TOOL_CHOICE_NONE)
    if cfg.temperature is not None:
        params.temperature = cfg.temperature
    return params


async def _stream(
    state: RunState, ctx: RunContext, params: reasoner_pb2.CompletionParams
) -> tuple[reasoner_pb2.StepResult, tuple[int, int] | None]:
    """A streamed model call whose tokens become llm_token events as they arrive.

    Also returns the first and last event number of the step's text tokens
    (None: it wrote no text), so text that turns out to precede tool calls
    can be marked once the step has ended.
    """
    result = reasoner_pb2.StepResult()
    step = state.current_step
    sink = ctx.sink
    first = last = 0
    async for event in ctx.reasoner.stream_step(params, ctx.timeout()):
        kind = event.WhichOneof("event")
        if kind == "token":
            sink.token(step, token=event.token)
            last = sink.sequence
            first = first or last
        elif kind == "reasoning_token":
            sink.token(step, reasoning_token=event.reasoning_token)
        elif kind == "result":
            result = event.result
    return result, ((first, last) if first else None)


async def _call(
    state: RunState, ctx: RunContext, params: reasoner_pb2.CompletionParams, stream: bool
) -> reasoner_pb2.StepResult:
    """One model call, post-reasoning hooks applied, every tool call with a usable, unique id.

    A streamed step's text reaches the client before anyone knows whether the
    step is the answer; when it ends calling tools, a `planning_text` decision
    (before any tool event) names the token events that were planning, not answer.
    """
    streamed: tuple[int, int] | None = None
    if stream:
        result, streamed = await ctx.unless_cancelled(_stream(state, ctx, params))
    else:
        result = await ctx.unless_cancelled(ctx.reasoner.step(params, ctx.timeout()))
    say_fallbacks(ctx, result)
    if state.config.hooks:
        message, changed = await call_hooks(
            state.config.hooks, "post_reasoning", hook_context(state), result.message
        )
        for name in changed:
            ctx.sink.decision("hook", f"{name} changed the model's message")
        result.message.CopyFrom(message)
    make_call_ids_unique(result.message, state.messages)
    if streamed is not None and _plans(result.message, state.current_step < state.max_steps):
        first, last = streamed
        step = state.current_step
        detail = f"llm_token events {first}-{last} (step {step}): text before tool calls"
        ctx.sink.decision(PLANNING_TEXT, detail)
    return result


def say_fallbacks(ctx: RunContext, result: reasoner_pb2.StepResult) -> None:
    """A `model_fallback` decision when another model answered in place of the one asked for."""
    if result.fallbacks:
        failed = "; ".join(f"{f.model!r} failed ({f.code}: {f.message})" for f in result.fallbacks)
        ctx.sink.decision(MODEL_FALLBACK, f"{failed}; {result.answered_by!r} answered")


def answered_by(result: reasoner_pb2.StepResult) -> list[str]:
    """The model that answered a call, for the run's list of models (none from an older Reasoner)."""
    return [result.answered_by] if result.answered_by else []


def _plans(message: common_pb2.Message, tools_run: bool) -> bool:
    """Whether a step's text came before tool calls that will run (not the answer).

    At the step limit no tool runs (the text is the answer), and the finish
    tool of a structured-output run is the answer, not a plan.
    """
    return tools_run and any(c.name != FINAL_ANSWER_TOOL for c in message.tool_calls)


def _answer(result: reasoner_pb2.StepResult) -> common_pb2.Message:
    """The assistant message of an answering call, tool calls dropped (none may be left unanswered)."""
    msg = common_pb2.Message()
    msg.CopyFrom(result.message)
    del msg.tool_calls[:]
    return msg


async def agent(state: RunState, ctx: RunContext) -> Update:
    """Compress the context if the next call would not fit, else make the step's model call.

    A compressing pass only adds the summary message (the graph comes back
    here). With an output schema a plain-text answer is not final: the model
    is told so (one-time hint) and asked again, at the cost of a step; and a
    validated answer with no reply text gets one more call for the text.
    """
    try:
        compressed = await _compress(state, ctx)
        if compressed.messages:
            return compressed
        if state.structured_output_json:
            update = await _reply_text(state, ctx)
            update.summary_stalled_at = compressed.summary_stalled_at
            return update
    except RunCancelled:
        return Update(stop=True, stop_reason=StopReason.CANCELLED)
    update, asked = await _fitting(state, ctx)
    update.summary_stalled_at = compressed.summary_stalled_at
    if update.usage is not None and update.usage.prompt_tokens > 0 and update.llm_calls:
        estimate = estimate_prompt(_prompt(asked, ctx), _specs(asked, ctx))
        update.calibration = Calibration(update.usage.prompt_tokens // update.llm_calls, estimate)
    last = update.messages[-1] if update.messages else None
    structured = state.config.output_schema is not None
    if structured and not update.stop and last is not None and not last.tool_calls:
        ctx.sink.decision("structured_output_missing", "plain-text answer; final_answer asked for again")
        update.steps, update.suggested_next_step, update.hint = 1, FINAL_ANSWER_TOOL, _ASK_FOR_FINAL_ANSWER
    return update


async def _fitting(state: RunState, ctx: RunContext) -> tuple[Update, RunState]:
    """The step's model call, and the state it was made from.

    When the model refuses the prompt as longer than its context window
    (CONTEXT_LENGTH_EXCEEDED, whatever the gateway's estimate said), context
    compression answers with ONE summary of the older messages and ONE retry
    of the step on the shorter conversation; the summary is kept in the thread
    like any other. With compression off, without anything to summarize, or
    when the retry is refused again, the run ends with an error that names
    the model's context window.
    """
    try:
        return await _model_step(state, ctx), state
    except AgentloopError as exc:
        if reason_of(exc) != Reason.CONTEXT_LENGTH_EXCEEDED:
            raise
        refused = exc
    if state.config.context_budget_tokens <= 0:
        raise _too_long(refused, "and context compression is off (AGENTLOOP_CONTEXT_BUDGET_TOKENS=0)")
    ctx.sink.decision(
        "context_length_exceeded",
        f"the model refused the prompt as too long for its context window ({refused.message}); "
        "older messages are summarized and the step is tried once more",
    )
    attempt = await summarize(state, ctx, state.calibration)
    if attempt is None or attempt.message is None or attempt.result is None:
        why = "no older messages to summarize" if attempt is None else "the summary could not be made"
        raise _too_long(refused, f"and {why}")
    shorter = dataclasses.replace(state, messages=[*state.messages, attempt.message])
    try:
        update = await _model_step(shorter, ctx)
    except AgentloopError as exc:
        if reason_of(exc) != Reason.CONTEXT_LENGTH_EXCEEDED:
            raise
        raise _too_long(exc, "even after older messages were summarized") from None
    update.messages.insert(0, attempt.message)
    update.llm_calls += 1
    update.usage = _sum(attempt.result.usage, update.usage)
    update.models = [*answered_by(attempt.result), *update.models]
    return update, shorter


def _too_long(refused: AgentloopError, why: str) -> AgentloopError:
    """The run's error when a conversation does not fit the model's context window: the model's words kept."""
    error = AgentloopError(
        f"the conversation does not fit the model's context window {why}: {refused.message}",
        reason=Reason.CONTEXT_LENGTH_EXCEEDED,
    )
    error.code = refused.code
    return error


def _sum(first: common_pb2.Usage, second: common_pb2.Usage | None) -> common_pb2.Usage:
    total = common_pb2.Usage()
    total.CopyFrom(first)
    if second is not None:
        for name in (
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "reasoning_tokens",
            "cached_prompt_tokens",
        ):
            setattr(total, name, getattr(total, name) + getattr(second, name))
    return total


async def _compress(state: RunState, ctx: RunContext) -> Update:
    """A summary of older messages when the next prompt would exceed the budget (an Update without
    messages: nothing to add).

    At most one summary attempt per budget crossing (`summary_due`); when no
    summary is made the call goes ahead trimmed, which is said once here, and
    an attempt that failed or did not fit makes the next ones wait
    (`summary_stalled_at` in the returned Update).
    """
    budget = state.config.context_budget_tokens
    if budget <= 0:
        return Update()
    estimate = estimate_prompt(_prompt(state, ctx, fit=False), _specs(state, ctx))
    if state.calibration.fits(estimate, budget):
        return Update()
    predicted = state.calibration.predict(estimate)
    last = state.last_message
    stalled = last is not None and summary_range(last) is not None  # just summarized, still over
    if summary_due(state):
        attempt = await summarize(state, ctx, state.calibration)
        if attempt is not None and attempt.message is not None and attempt.result is not None:
            return Update(
                messages=[attempt.message],
                llm_calls=1,
                usage=attempt.result.usage,
                models=answered_by(attempt.result),
            )
        stalled = attempt is not None
    update = Update(summary_stalled_at=len(state.messages) if stalled else None)
    if len(_prompt(state, ctx)) == len(_prompt(state, ctx, fit=False)):
        return update  # over by the estimate only: trimming would cut nothing either
    detail = f"~{predicted:,} tokens over the budget of {budget:,}: the oldest messages are cut"
    ctx.sink.decision("context_trimmed", detail)
    return update


async def _reply_text(state: RunState, ctx: RunContext) -> Update:
    """The one extra call for a reply text after a validated structured answer came without one."""
    params = await _params(state, ctx, with_tools=False)
    params.tool_choice.CopyFrom(_TOOL_CHOICE_NONE)
    params.messages.append(common_pb2.Message(role=common_pb2.ROLE_SYSTEM, content=_ASK_FOR_REPLY_TEXT))
    stream = state.config.stream_mode != agent_pb2.STREAM_MODE_NONE
    result = await _call(state, ctx, params, stream=stream)
    return Update(messages=[_answer(result)], llm_calls=1, usage=result.usage, models=answered_by(result))


def call_model_again(state: RunState) -> bool:
    """After the agent node: a summary was just made, or a structured answer is still missing."""
    last = state.last_message
    if last is not None and summary_range(last) is not None:
        return True
    return state.config.output_schema is not None and not state.structured_output_json


def wants_reply_text(state: RunState) -> bool:
    """After the tools node: a validated structured answer, but no text came with it."""
    if not (state.stop and state.stop_reason == StopReason.COMPLETED and state.structured_output_json):
        return False
    last = state.last_message
    if last is None or last.role != common_pb2.ROLE_TOOL:
        return False
    answering = next((m for m in reversed(state.messages) if m.role == common_pb2.ROLE_ASSISTANT), None)
    return answering is not None and not answering.content.strip()


def _streams(mode: int, structured: bool) -> bool:
    """Whether a step's model call streams its tokens.

    Whether a step is the final answer is known only when it ends, so
    FINAL_ONLY streams every step (planning text is marked afterwards, see
    `_call`) instead of generating the answer a second time. Its one
    exception: with an output schema the answer is the finish tool's
    arguments, not text, so those steps stream only in ALL_STEPS.
    """
    if mode == agent_pb2.STREAM_MODE_ALL_STEPS:
        return True
    return mode == agent_pb2.STREAM_MODE_FINAL_ONLY and not structured


async def _model_step(state: RunState, ctx: RunContext) -> Update:
    """ONE model call; whether it streams follows the run's stream mode (see `_streams`).

    At the step limit the model is called without tools (or, for structured
    output, made to call the finish tool) to answer from what it has
    (stop_reason max_steps); if it still asks for tools they are not started
    and the run says it needed more steps. The one-time hint is consumed here.
    Cancel abandons the call: nothing was decided yet.
    """
    mode = state.config.stream_mode
    structured = state.config.output_schema is not None
    clear = "" if state.hint else None  # the hint is one-time: consumed by this call
    try:
        if state.current_step >= state.max_steps:
            params = await _params(state, ctx, with_tools=False)
            result = await _call(state, ctx, params, stream=_streams(mode, structured))
            if structured and result.message.tool_calls:
                only_finish = [c for c in result.message.tool_calls if c.name == FINAL_ANSWER_TOOL][:1]
                del result.message.tool_calls[:]
                result.message.tool_calls.extend(only_finish)
                return _step_update(result, clear)
            stop_reason = StopReason.MAX_STEPS
            if result.message.tool_calls:
                stop_reason = StopReason.NEEDS_MORE_STEPS
                names = ", ".join(c.name for c in result.message.tool_calls)
                ctx.sink.decision(
                    "remaining_steps",
                    f"no steps left (limit {state.max_steps}) for the tools the model asked for: {names}",
                )
            return _step_update(result, clear, stop_reason=stop_reason)
        params = await _params(state, ctx, with_tools=True)
        result = await _call(state, ctx, params, stream=_streams(mode, structured))
        return _step_update(result, clear)
    except RunCancelled:
        return Update(stop=True, stop_reason=StopReason.CANCELLED)


def _step_update(
    result: reasoner_pb2.StepResult, clear: str | None, stop_reason: StopReason | None = None
) -> Update:
    """One model call's update; `clear` consumes the one-time hint.

    With a stop_reason the loop ends on this call: its message becomes the
    answer (tool calls it still asks for are dropped, as they will not run).
    """
    return Update(
        messages=[result.message if stop_reason is None else _answer(result)],
        llm_calls=1,
        usage=result.usage,
        stop=True if stop_reason is not None else None,
        stop_reason=stop_reason,
        hint=clear,
        suggested_next_step=clear,
        models=answered_by(result),
    )


# --- finalize ------------------------------------------------------------------------


def explain_stop(state: RunState, reason: StopReason | None = None) -> str:
    """The reply to give when the loop ended (for `reason`, default its stop reason) without an answer."""
    reason = reason or state.stop_reason
    if reason == StopReason.MAX_STEPS:
        return (
            f"I stopped after {state.current_step} tool steps (the limit is {state.max_steps}) "
            "without reaching an answer."
        )
    if reason == StopReason.NEEDS_MORE_STEPS:
        return (
            f"I need more steps to finish this request: the limit of {state.max_steps} tool steps "
            "was reached while more tool calls were still needed."
        )
    if reason == StopReason.CANCELLED:
        return "The run was cancelled before an answer was written."
    if reason == StopReason.STRUCTURED_OUTPUT_MISSING:
        return (
            f"I could not give an answer in the required format within {state.max_steps} steps: "
            "no final_answer matched the schema."
        )
    return f"The run ended ({reason}) before an answer was written."


async def finalize(state: RunState, ctx: RunContext) -> Update:
    """Write final_reply and stop_reason; close any tool call left without a result.

    A run cancelled between the agent and tools nodes still has the model's
    tool calls pending: they get "cancelled" results so the thread stays valid
    for its next run.
    """
    closing = [cancelled_result(c) for c in state.pending_tool_calls()]
    for result in closing:
        await ctx.journal.tool_result(state.run_id, result)
        ctx.sink.tool_end(result)
    stop_reason = _final_stop_reason(state)
    reply = _final_reply(state, stop_reason, closed_calls=bool(closing))
    update = Update(
        messages=[tool_message(r) for r in closing],
        tool_results=closing,
        stop=True,
        stop_reason=stop_reason,
        final_reply=reply,
    )
    if stop_reason != StopReason.CANCELLED:
        await _remember_session(state, ctx, update)
    return update


def _final_stop_reason(state: RunState) -> StopReason:
    """The loop's stop reason, unless a structured run ended without its output: clients must know."""
    stop_reason = state.stop_reason or StopReason.COMPLETED
    if (
        state.config.output_schema is not None
        and not state.structured_output_json
        and stop_reason in (StopReason.COMPLETED, StopReason.MAX_STEPS)
    ):
        return StopReason.STRUCTURED_OUTPUT_MISSING
    return stop_reason


def _final_reply(state: RunState, stop_reason: StopReason, closed_calls: bool) -> str:
    """The run's reply, never empty, and saying why when the run did not finish its work.

    A reply cut short by the step limit or lacking its structured output
    carries the explanation, so a client showing only the text still tells
    the user what happened.
    """
    reply = state.final_reply or _last_answer(state, closed_calls)
    if not reply.strip():
        explained = state.stop_reason or stop_reason != StopReason.COMPLETED
        reply = explain_stop(state, stop_reason) if explained else "The model returned an empty answer."
    if stop_reason in (StopReason.NEEDS_MORE_STEPS, StopReason.STRUCTURED_OUTPUT_MISSING):
        explanation = explain_stop(state, stop_reason)
        if explanation not in reply:
            reply = f"{reply}\n\n{explanation}".strip()
    return reply


def _last_answer(state: RunState, closed_calls: bool) -> str:
    """What the model last wrote for the user, when no node set the reply.

    A structured run's reply is the model's last text beside its output (or
    the output itself). A last message whose tool calls were just closed as
    cancelled asked for tools, so its text is no answer.
    """
    if state.structured_output_json:
        texts = [m.content for m in state.run_messages() if m.role == common_pb2.ROLE_ASSISTANT and m.content]
        return texts[-1] if texts else state.structured_output_json
    last = state.last_message
    if not closed_calls and last is not None and last.role == common_pb2.ROLE_ASSISTANT:
        return last.content
    return ""


async def _remember_session(state: RunState, ctx: RunContext, update: Update) -> None:
    """Session memory (opt-in): what the run learned becomes one long-term memory of the user."""
    if not (state.config.session_memory and state.config.memory) or ctx.memories is None:
        return
    try:
        learned = await session_summary(state, ctx)
    except RunCancelled:
        return
    if learned is None:
        return
    text, result = learned
    await ctx.memories.add_memory(state.user_id, text)
    ctx.sink.decision("memory_stored", f"session: {text}")
    update.llm_calls, update.usage, update.models = 1, result.usage, answered_by(result)
