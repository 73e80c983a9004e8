"""Compression by summary: older messages become one summary message, made by one model call.

When the next model call's prompt would exceed the run's budget, every group
older than the recent window (context_keep_recent_tokens, kept verbatim) is
summarized through the Reasoner, the previous summary folded in, so the
conversation the model sees shrinks to system prompt + summary + recent
messages and can grow again until the next crossing: one summary attempt per
budget crossing (`summary_due`). An attempt that fails, or a summary that
still leaves the prompt over the budget, is not repeated step after step: the
calls go ahead trimmed until the conversation has grown by what a summary
frees, which is the next crossing.

The summary is bounded: the call asks for at most `max_tokens` tokens, and a
model that writes more is cut to that size before anything is kept. It is
appended to the thread as a message named "context_summary:<first>-<end>"
(the thread indices it newly covers; it stands in for everything before
<end>). It is committed with the agent node's checkpoint like any message, so
a resumed or adopted run, and every later run of the thread, reads it instead
of summarizing the same span again; the originals stay stored and readable.
The model reads it as a framed record in a user message (gateway.policies.context.view),
never as a system instruction.

Session memory uses the same one-call shape at the end of a run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from agentloop.kernel.errors import AgentloopError
from agentloop.v1 import common_pb2, reasoner_pb2
from gateway.journal.state import RunState
from gateway.loop.run_context import RunCancelled, RunContext, hook_context
from gateway.policies.context import (
    CHARS_PER_TOKEN,
    HEADROOM,
    SUMMARY_NAME,
    Calibration,
    estimate_prompt,
    estimate_tokens,
    groups,
    latest_summary,
    summary_range,
)
from gateway.policies.hooks import call_hooks

log = logging.getLogger(__name__)

DEFAULT_SUMMARY_PROMPT = (
    "Summarize the conversation below so that it can replace it in your memory. Keep every fact, "
    "name, number, preference, decision and open question that the user or the tools gave, and what "
    "was already answered. Drop greetings and repetition. Write plain sentences, no preamble."
)
TRANSCRIPT_HEADER = "Conversation to summarize:"
"""Fixed line between the instruction and the transcript (scripted models match on it)."""

SESSION_MEMORY_PROMPT = (
    "Write at most three short sentences about what was learned in the conversation below that is "
    "worth remembering about the user or their work in later conversations. Write only the sentences."
)
SESSION_HEADER = "Session to remember:"
_SYSTEM = "You write short, faithful summaries."
_MAX_SUMMARY_TOKENS = 1024
_MAX_MEMORY_CHARS = 2000
_MIN_LINE_CHARS = 40


def summary_message(text: str, first: int, end: int) -> common_pb2.Message:
    """The stored summary of thread messages [first, end) (and of the summary before them)."""
    name = f"{SUMMARY_NAME}:{first}-{end}"
    return common_pb2.Message(role=common_pb2.ROLE_SYSTEM, name=name, content=text)


def plan(messages: Sequence[common_pb2.Message], keep_estimate: int) -> tuple[int, int] | None:
    """Thread indices [first, end) to summarize now, or None when nothing is old enough.

    `messages` starts with the system prompt. The newest groups within
    `keep_estimate` stay verbatim (at least the newest group), a group is
    never split, and only what the newest summary does not cover yet counts.
    """
    thread = list(messages[1:])
    found = latest_summary(messages)
    first = found[1] if found is not None else 0
    index = {id(m): i for i, m in enumerate(thread)}
    candidates = [m for m in thread[first:] if summary_range(m) is None]
    grouped = groups(candidates)
    start, kept = len(grouped), 0
    while start > 0:
        cost = sum(estimate_tokens(m) for m in grouped[start - 1])
        if start < len(grouped) and kept + cost > keep_estimate:
            break
        kept += cost
        start -= 1
    if start == 0:
        return None
    return first, index[id(grouped[start][0])]


def _line(msg: common_pb2.Message, cap: int) -> str:
    role = common_pb2.Role.Name(msg.role).removeprefix("ROLE_").lower()
    text = msg.content if len(msg.content) <= cap else msg.content[:cap] + " […]"
    calls = "; ".join(f"{c.name}({c.arguments_json[:cap]})" for c in msg.tool_calls)
    if msg.role == common_pb2.ROLE_TOOL:
        role = f"tool {msg.name}".strip()
    parts = [text] if text else []
    if calls:
        parts.append(f"calls {calls}")
    return f"{role}: {' '.join(parts)}"


def transcript(messages: Sequence[common_pb2.Message], budget_estimate: int, earlier: str = "") -> str | None:
    """The messages as text, each cut shorter until the whole fits `budget_estimate` (None: never fits).

    The `earlier` summary is never cut: it is already the compact form of
    everything before, and cutting it would lose facts for good.
    """
    head = f"Earlier summary: {earlier}\n" if earlier else ""
    cap = max((len(m.content) for m in messages), default=0) + 1
    while True:
        text = head + "\n".join(_line(m, cap) for m in messages)
        if len(text) // 4 <= budget_estimate:
            return text
        if cap <= _MIN_LINE_CHARS:
            return None
        cap //= 2


def _request(
    model: str, instruction: str, header: str, body: str, max_tokens: int
) -> reasoner_pb2.CompletionParams:
    params = reasoner_pb2.CompletionParams(
        model=model,
        messages=[
            common_pb2.Message(role=common_pb2.ROLE_SYSTEM, content=_SYSTEM),
            common_pb2.Message(role=common_pb2.ROLE_USER, content=f"{instruction}\n\n{header}\n{body}"),
        ],
    )
    params.max_tokens = max_tokens
    return params


async def _one_call(
    state: RunState, ctx: RunContext, params: reasoner_pb2.CompletionParams, what: str
) -> reasoner_pb2.StepResult | None:
    """One non-streaming, tool-less Reasoner call; None (with a decision event) when it fails.

    The run's pre-reasoning hooks see its messages like any model call's: a
    redaction hook must also cover what is sent to be summarized.
    """
    if state.config.hooks:
        messages, changed = await call_hooks(
            state.config.hooks, "pre_reasoning", hook_context(state), list(params.messages)
        )
        for name in changed:
            ctx.sink.decision("hook", f"{name} changed the messages sent for the {what} call")
        del params.messages[:]
        params.messages.extend(messages)
    try:
        return await ctx.unless_cancelled(ctx.reasoner.step(params, ctx.timeout()))
    except RunCancelled:
        raise
    except AgentloopError as exc:
        log.warning("%s call failed: %s", what, exc)
        ctx.sink.decision(f"{what}_failed", f"the {what} call failed ({exc.code.name}: {exc})")
        return None


def keep_recent_tokens(state: RunState) -> int:
    """The recent window kept verbatim: the run's setting, else a quarter of the budget."""
    cfg = state.config
    return cfg.context_keep_recent_tokens or cfg.context_budget_tokens // 4


def summary_due(state: RunState) -> bool:
    """Whether this budget crossing may still try a summary: at most one attempt per crossing.

    Not right after a summary (the prompt is still over the budget: summarizing
    again would only summarize the summary), and not after an attempt of this
    run that failed or did not bring the prompt under the budget
    (`RunState.summary_stalled_at`) until the conversation has grown since by
    what a summary frees (the budget less the recent window): the next
    crossing. Meanwhile the caller trims.
    """
    last = state.last_message
    if last is not None and summary_range(last) is not None:
        return False
    stalled = state.summary_stalled_at
    if stalled is None:
        return True
    grown = sum(estimate_tokens(m) for m in state.messages[stalled:])
    return grown >= state.config.context_budget_tokens - keep_recent_tokens(state)


@dataclass(frozen=True)
class Attempt:
    """One summary attempt: the summary message and its call's result, both None when it failed."""

    message: common_pb2.Message | None = None
    result: reasoner_pb2.StepResult | None = None


def bounded_summary(text: str, max_tokens: int) -> tuple[str, bool]:
    """The summary cut to what `max_tokens` allows (by the gateway's estimate), and whether it was cut.

    A model that ignores max_tokens must not leave megabytes in the thread,
    to be sent again with every later model call.
    """
    limit = max_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text, False
    return text[: limit - 2].rstrip() + " …", True


async def summarize(state: RunState, ctx: RunContext, calibration: Calibration) -> Attempt | None:
    """Summarize what is older than the recent window, in one model call.

    None when nothing is old enough (no call made); an Attempt without a
    message when the attempt failed (a decision event says why). The caller
    trims in both cases. Calibration stays with the loop's own calls (same
    tools declared each time); the transcript is sized with a ratio of at
    least 1, to stay on the safe side.
    """
    cfg = state.config
    span = plan(state.messages, calibration.size_estimate(keep_recent_tokens(state)))
    if span is None:
        return None
    first, end = span
    thread = state.messages[1:]
    grouped = groups([m for m in thread[first:end] if summary_range(m) is None])
    previous = latest_summary(state.messages)
    earlier = previous[0].content if previous is not None else ""
    instruction = cfg.context_summary_prompt or DEFAULT_SUMMARY_PROMPT
    frame = common_pb2.Message(content=f"{_SYSTEM}{instruction}{TRANSCRIPT_HEADER}")
    overhead = estimate_prompt([frame]) + 16
    room = calibration.size_estimate(int(cfg.context_budget_tokens * HEADROOM)) - overhead
    # The summary call must fit the budget too: a span too long for it is summarized in parts,
    # oldest first (the next pass takes the rest).
    while (body := transcript(_flat(grouped), max(room, _MIN_LINE_CHARS), earlier)) is None and grouped[1:]:
        dropped = grouped.pop()
        end = next(i for i, m in enumerate(thread) if m is dropped[0])
    if body is None:
        ctx.sink.decision("context_summary_failed", "the oldest messages are too large to summarize")
        return Attempt()
    covered = _flat(grouped)
    max_tokens = max(64, min(_MAX_SUMMARY_TOKENS, keep_recent_tokens(state)))
    params = _request(cfg.model, instruction, TRANSCRIPT_HEADER, body, max_tokens)
    result = await _one_call(state, ctx, params, "context_summary")
    if result is None:
        return Attempt()
    text, cut = bounded_summary(result.message.content.strip(), max_tokens)
    if not text:
        ctx.sink.decision("context_summary_failed", "the summary call returned no text")
        return Attempt()
    message = summary_message(text, first, end)
    before = sum(estimate_tokens(m) for m in covered) + len(earlier) // CHARS_PER_TOKEN
    after = estimate_tokens(message)
    note = f"; longer than max_tokens={max_tokens} allows, cut to {len(text):,} characters" if cut else ""
    ctx.sink.decision(
        "context_compressed",
        f"summarized messages {first + 1}–{end} (~{before:,} → ~{after:,} tokens){note}",
    )
    return Attempt(message, result)


def _flat(grouped: list[list[common_pb2.Message]]) -> list[common_pb2.Message]:
    return [m for group in grouped for m in group]


async def session_summary(state: RunState, ctx: RunContext) -> tuple[str, reasoner_pb2.StepResult] | None:
    """What this run learned, in a few sentences, for the user's long-term memory (one model call)."""
    messages = [m for m in state.run_messages() if summary_range(m) is None]
    if not messages:
        return None
    room = state.config.context_budget_tokens or 8000
    body = transcript(messages, max(room // 2, _MIN_LINE_CHARS))
    while body is None and messages[1:]:
        messages = messages[len(messages) // 2 :]  # the newest part of a long run
        body = transcript(messages, max(room // 2, _MIN_LINE_CHARS))
    if body is None:
        return None
    params = _request(state.config.model, SESSION_MEMORY_PROMPT, SESSION_HEADER, body, 256)
    result = await _one_call(state, ctx, params, "session_memory")
    if result is None:
        return None
    text = result.message.content.strip()[:_MAX_MEMORY_CHARS]
    return (text, result) if text else None
