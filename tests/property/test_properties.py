"""Property-based tests: whatever a client or a model sends, nothing breaks.

- Request parsing: arbitrary Agent requests (unicode, NUL and empty strings,
  negative and extreme numbers, unknown enum values, random histories) sent to
  a real gateway, on SQLite and on Postgres, are answered OK or with a clean
  client-error status, never INTERNAL or UNKNOWN; a Run that starts ends with
  exactly one final or error event, and that error is not INTERNAL/UNKNOWN either.
- Tool arguments: arbitrary text and JSON for the built-in tools and for a tool
  with a rich typed signature always yield exactly one ToolResult per call
  through `tool_svc.executor.execute`; errors carry the kind that matches what
  was wrong, and nothing raises.

Examples are derandomized (a fixed seed per test) so every run checks the same cases.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import tempfile
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

import grpc
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agentloop.kernel.settings import ToolSettings
from agentloop.kernel.wellknown import dict_to_struct, duration
from agentloop.scripted_model import Scenario, Script, Turn
from agentloop.v1 import agent_pb2, common_pb2, tools_pb2
from tests.support.postgres import fresh_postgres_database
from tests.support.stack import Stack, start_stack
from tool_svc import ToolRegistry, tool
from tool_svc.builtins import default_registry
from tool_svc.executor import execute
from tool_svc.registry import Tool

# --- shared strategies ---------------------------------------------------------------------------

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

SPECIAL_TEXT = [
    "",
    " ",
    "\t\n",
    "\x00",
    "a\x00b",
    "²",  # str.isdigit() is True, int() refuses it
    "١٢",  # Arabic-Indic digits
    "99999999999999999999999999",
    "-1",
    "0",
    "x:1",
    ":",
    "🙂" * 3,
    "\u202eevil",
    "Ω" * 300,
    "' OR 1=1 --",
    '{"a": 1}',
]

texts = st.one_of(st.text(max_size=30), st.sampled_from(SPECIAL_TEXT))
int32s = st.one_of(
    st.integers(INT32_MIN, INT32_MAX), st.sampled_from([0, 1, -1, 1000, 1001, INT32_MIN, INT32_MAX])
)
int64s = st.one_of(st.integers(INT64_MIN, INT64_MAX), st.sampled_from([0, -1, INT64_MIN, INT64_MAX]))
doubles = st.floats(allow_nan=True, allow_infinity=True)


def enum_values(values: Sequence[int]) -> st.SearchStrategy[Any]:
    """Known values of a proto enum, and arbitrary (unknown) int32 numbers (proto3 enums are open)."""
    return st.one_of(st.sampled_from(list(values)), int32s)


# --- 1. arbitrary requests against a real gateway --------------------------------------------------
#
# Strategies cannot see the ids the module fixture creates, so they draw references ("@run0",
# "@thread0", ...) that the test resolves to real ids; that also lets @example pin exact cases.

OK_SCRIPT = Script(scenarios=(Scenario(match="", turns=(Turn(content="ok"),)),))
CLIENT_ERRORS = frozenset(
    {
        grpc.StatusCode.OK,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.FAILED_PRECONDITION,
    }
)
NEVER = frozenset({"INTERNAL", "UNKNOWN"})
RPC_TIMEOUT_S = 20
OWNER, OTHER = "ana", "bob"
RUN_REFS = ("@run0", "@run1", "@run2")  # two runs of OWNER on @thread0, one of OTHER on @thread1
THREAD_REFS = ("@thread0", "@thread1")
CHECKPOINT_REFS = ("@checkpoint0", "@checkpoint1")
PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass(repr=False)
class Known:
    """A gateway with some real data in it, and the real ids behind each reference."""

    stack: Stack
    refs: dict[str, str]
    backend: str

    def __repr__(self) -> str:
        return f"Known(backend={self.backend!r})"

    def resolve(self, text: str) -> str:
        # Longest first, so that no reference eats the prefix of a longer one.
        for ref in sorted(self.refs, key=len, reverse=True):
            text = text.replace(ref, self.refs[ref])
        return text


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["sqlite", "postgres"])
async def known(request: pytest.FixtureRequest) -> AsyncIterator[Known]:
    """One stack per backend for the whole module, with two threads and three finished runs."""
    async with contextlib.AsyncExitStack() as resources:
        url = None
        if request.param == "postgres":
            url = await resources.enter_async_context(fresh_postgres_database())
        stack = await start_stack(OK_SCRIPT, database_url=url)
        resources.push_async_callback(stack.close)
        first = await stack.run("hello", user_id=OWNER)
        second = await stack.run("again", user_id=OWNER, thread_id=first[0].thread_id)
        other = await stack.run("someone else", user_id=OTHER)
        listing = await stack.agent.ListCheckpoints(
            agent_pb2.ListCheckpointsRequest(thread_id=first[0].thread_id, user_id=OWNER), timeout=10
        )
        checkpoints = [c.checkpoint_id for c in listing.checkpoints]
        refs = {
            **dict(zip(RUN_REFS, (first[0].run_id, second[0].run_id, other[0].run_id), strict=True)),
            **dict(zip(THREAD_REFS, (first[0].thread_id, other[0].thread_id), strict=True)),
            **dict(zip(CHECKPOINT_REFS, (checkpoints[0], checkpoints[-1]), strict=True)),
        }
        yield Known(stack, refs, request.param)


user_ids = st.one_of(st.sampled_from([OWNER, OWNER, OTHER]), texts)
run_refs = st.one_of(st.sampled_from(RUN_REFS), texts)
thread_refs = st.one_of(st.sampled_from(THREAD_REFS), texts)
numeric_texts = st.one_of(
    st.integers(0, 10**30).map(str), st.sampled_from(["1", "2", "²", "١", "٣", "𝟗", "0x1", "1e3", "-1"])
)
# (thread, user): mostly a thread with its owner, so that requests get past the ownership check.
thread_access = st.one_of(
    st.sampled_from([("@thread0", OWNER), ("@thread1", OTHER)]), st.tuples(thread_refs, user_ids)
)

tool_calls = st.builds(
    common_pb2.ToolCall,
    id=texts,
    name=st.one_of(texts, st.sampled_from(["calculator", "current_time", "sql_query"])),
    arguments_json=texts,
)
random_messages = st.builds(
    common_pb2.Message,
    role=enum_values(common_pb2.Role.values()),
    content=texts,
    reasoning_content=texts,
    tool_calls=st.lists(tool_calls, max_size=3),
    tool_call_id=texts,
    name=texts,
)


@st.composite
def valid_histories(draw: st.DrawFn) -> list[common_pb2.Message]:
    """Histories that pass validation, so their messages reach the Reasoner and the model."""
    history: list[common_pb2.Message] = []
    for turn in range(draw(st.integers(0, 3))):
        history.append(common_pb2.Message(role=common_pb2.ROLE_USER, content=draw(texts)))
        calls = [
            common_pb2.ToolCall(
                id=f"call-{turn}-{i}-{draw(st.text(max_size=5))}",
                name=draw(st.text(min_size=1, max_size=10)),
                arguments_json=draw(texts),
            )
            for i in range(draw(st.integers(0, 2)))
        ]
        assistant = common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content=draw(texts), name=draw(texts))
        assistant.tool_calls.extend(calls)
        history.append(assistant)
        for call in calls:
            history.append(
                common_pb2.Message(
                    role=common_pb2.ROLE_TOOL, content=draw(texts), tool_call_id=call.id, name=call.name
                )
            )
        if calls:
            history.append(common_pb2.Message(role=common_pb2.ROLE_ASSISTANT, content=draw(texts)))
    return history


@st.composite
def run_options(draw: st.DrawFn) -> agent_pb2.RunOptions:
    options = agent_pb2.RunOptions(
        system_prompt=draw(texts),
        max_steps=draw(int32s),
        stream_mode=draw(enum_values(agent_pb2.StreamMode.values())),
        model=draw(texts),
        tools=draw(
            st.one_of(
                st.just([]),
                st.lists(st.one_of(texts, st.sampled_from(["calculator", "current_time"])), max_size=3),
            )
        ),
        tool_timeout=duration(draw(st.floats(-10, 10_000, allow_nan=False))),
        concurrency=draw(enum_values(agent_pb2.ConcurrencyPolicy.values())),
        cancel_on_disconnect=draw(st.booleans()),
        output_schema=dict_to_struct(draw(st.sampled_from([{}, {"type": "object"}, {"type": 12}]))),
        serial_tools=draw(st.booleans()),
        require_approval=draw(st.lists(texts, max_size=2)),
        hooks=draw(st.lists(texts, max_size=2)),
        disable_memory=draw(st.booleans()),
        disable_flow_guidance=draw(st.booleans()),
    )
    if draw(st.booleans()):
        options.temperature = draw(doubles)
    if draw(st.booleans()):
        options.loop_detection.CopyFrom(
            agent_pb2.LoopDetection(
                disabled=draw(st.booleans()),
                args_similarity=draw(doubles),
                result_similarity=draw(doubles),
                max_period=draw(int32s),
            )
        )
    return options


@st.composite
def sensible_options(draw: st.DrawFn) -> agent_pb2.RunOptions:
    """Options a real client would send."""
    options = agent_pb2.RunOptions(
        max_steps=draw(st.integers(0, 5)),
        stream_mode=draw(st.sampled_from(agent_pb2.StreamMode.values())),
        tools=draw(st.lists(st.sampled_from(["calculator", "current_time", "sql_query"]), unique=True)),
        tool_timeout=duration(draw(st.floats(0, 60))),
        system_prompt=draw(st.one_of(st.just(""), texts)),
        cancel_on_disconnect=draw(st.booleans()),
    )
    if draw(st.booleans()):
        options.temperature = draw(st.floats(0, 2))
    return options


@st.composite
def run_fields(draw: st.DrawFn) -> dict[str, Any]:
    """The fields RunRequest and InvokeRequest share: half plausible, half absurd."""
    if draw(st.booleans()):
        return {
            "input": draw(st.one_of(st.just("what is up?"), texts.filter(str.strip))),
            "user_id": draw(user_ids),
            "thread_id": draw(st.one_of(st.just(""), st.uuids().map(str))),
            "history": draw(valid_histories()),
            "options": draw(sensible_options()),
        }
    return {
        "input": draw(texts),
        "user_id": draw(user_ids),
        "thread_id": draw(st.one_of(st.just(""), thread_refs)),
        "history": draw(st.one_of(valid_histories(), st.lists(random_messages, max_size=4))),
        "options": draw(run_options()),
    }


async def unary_status(call: Awaitable[Any]) -> tuple[grpc.StatusCode, str]:
    """The status of a unary call (OK or its error), never raising."""
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc.code(), exc.details() or ""
    return grpc.StatusCode.OK, ""


async def stream_status(call: Any) -> tuple[grpc.StatusCode, str, list[agent_pb2.RunEvent]]:
    """The status of a server stream and the events it carried before ending, never raising."""
    events: list[agent_pb2.RunEvent] = []
    try:
        async for response in call:
            events.append(response.event)
    except grpc.aio.AioRpcError as exc:
        return exc.code(), exc.details() or "", events
    return grpc.StatusCode.OK, "", events


def check_status(code: grpc.StatusCode, details: str, request: object) -> None:
    # Shown by --hypothesis-show-statistics: how deep the generated requests get.
    field_path = details.split(":", 1)[0].split("[", 1)[0] if code == grpc.StatusCode.INVALID_ARGUMENT else ""
    event(f"status {code.name} {field_path}".rstrip())
    assert code in CLIENT_ERRORS, f"{code.name}: {details}\nrequest: {request!r}"


def check_events(events: Sequence[agent_pb2.RunEvent], request: object) -> None:
    """A stream that carried events ends with at most one final/error event, the last, never a server bug."""
    terminal = [e for e in events if e.WhichOneof("event") in ("final", "error")]
    assert len(terminal) <= 1, f"{len(terminal)} terminal events\nrequest: {request!r}"
    if terminal:
        event(f"ended with {terminal[0].WhichOneof('event')}")
        assert terminal[0] is events[-1], f"request: {request!r}"
        error = terminal[0].error
        assert error.code not in NEVER, f"error event {error}\nrequest: {request!r}"


@pytest.mark.integration
@pytest.mark.asyncio(loop_scope="module")
@PROPERTY_SETTINGS
@given(fields=run_fields())
@example(fields={"input": "hi", "user_id": OWNER, "thread_id": "a\x00b", "history": [], "options": None})
@example(fields={"input": "hi", "user_id": "u\x00", "thread_id": "", "history": [], "options": None})
async def test_arbitrary_run_requests_never_break_the_gateway(known: Known, fields: dict[str, Any]) -> None:
    request = agent_pb2.RunRequest(**{**fields, "thread_id": known.resolve(fields["thread_id"])})
    code, details, events = await stream_status(known.stack.agent.Run(request, timeout=RPC_TIMEOUT_S))
    check_status(code, details, request)
    check_events(events, request)
    if code == grpc.StatusCode.OK:
        assert events, f"request: {request!r}"
        assert events[-1].WhichOneof("event") in ("final", "error"), f"request: {request!r}"


@pytest.mark.integration
@pytest.mark.asyncio(loop_scope="module")
@PROPERTY_SETTINGS
@given(fields=run_fields())
async def test_arbitrary_invoke_requests_never_break_the_gateway(
    known: Known, fields: dict[str, Any]
) -> None:
    request = agent_pb2.InvokeRequest(**{**fields, "thread_id": known.resolve(fields["thread_id"])})
    code, details = await unary_status(known.stack.agent.Invoke(request, timeout=RPC_TIMEOUT_S))
    check_status(code, details, request)


@pytest.mark.integration
@pytest.mark.asyncio(loop_scope="module")
@PROPERTY_SETTINGS
@given(
    access=thread_access,
    checkpoint=st.one_of(
        texts,
        st.sampled_from(CHECKPOINT_REFS),
        st.builds(lambda run, index: f"{run}:{index}", run_refs, numeric_texts),
        st.builds(lambda run, index: f"{run}:{index}", st.sampled_from(RUN_REFS), numeric_texts),
    ),
)
@example(access=("@thread0", OWNER), checkpoint="@run0:²")  # isdigit() but not int()
@example(access=("@thread0", OWNER), checkpoint=f"@run0:{2**64}")  # beyond any SQL integer
@example(access=("@thread0", OWNER), checkpoint=f"@run0:{2**31}")  # beyond a Postgres integer
@example(access=("a\x00b", OWNER), checkpoint="")  # Postgres text cannot hold NUL
async def test_arbitrary_get_thread_requests_never_break_the_gateway(
    known: Known, access: tuple[str, str], checkpoint: str
) -> None:
    thread, user = access
    request = agent_pb2.GetThreadRequest(
        thread_id=known.resolve(thread), user_id=user, checkpoint_id=known.resolve(checkpoint)
    )
    code, details = await unary_status(known.stack.agent.GetThread(request, timeout=RPC_TIMEOUT_S))
    check_status(code, details, request)


@pytest.mark.integration
@pytest.mark.asyncio(loop_scope="module")
@PROPERTY_SETTINGS
@given(
    access=thread_access,
    run=st.one_of(st.just(""), run_refs),
    page_size=st.one_of(st.integers(0, 5), int32s),
    page_token=st.one_of(st.just(""), numeric_texts, texts),
)
@example(access=("@thread0", OWNER), run="", page_size=0, page_token="²")
@example(access=("@thread0", OWNER), run="", page_size=0, page_token=str(2**64))
async def test_arbitrary_list_checkpoints_requests_never_break_the_gateway(
    known: Known, access: tuple[str, str], run: str, page_size: int, page_token: str
) -> None:
    thread, user = access
    request = agent_pb2.ListCheckpointsRequest(
        thread_id=known.resolve(thread),
        user_id=user,
        run_id=known.resolve(run),
        page_size=page_size,
        page_token=page_token,
    )
    code, details = await unary_status(known.stack.agent.ListCheckpoints(request, timeout=RPC_TIMEOUT_S))
    check_status(code, details, request)


@pytest.mark.integration
@pytest.mark.asyncio(loop_scope="module")
@PROPERTY_SETTINGS
@given(run=run_refs, user=user_ids, after=st.one_of(st.integers(0, 40), int64s))
@example(run="a\x00b", user=OWNER, after=0)  # Postgres text cannot hold NUL
async def test_arbitrary_watch_requests_never_break_the_gateway(
    known: Known, run: str, user: str, after: int
) -> None:
    request = agent_pb2.WatchRequest(run_id=known.resolve(run), user_id=user, after_sequence=after)
    code, details, events = await stream_status(known.stack.agent.Watch(request, timeout=RPC_TIMEOUT_S))
    check_status(code, details, request)
    check_events(events, request)
    assert all(e.sequence > after for e in events)


decisions = st.lists(
    st.builds(
        agent_pb2.ApprovalDecision,
        tool_call_id=texts,
        verdict=enum_values(agent_pb2.ApprovalDecision.Verdict.values()),
        reason=texts,
        arguments_json=texts,
    ),
    max_size=2,
)


@pytest.mark.integration
@pytest.mark.asyncio(loop_scope="module")
@PROPERTY_SETTINGS
@given(run=run_refs, user=user_ids, decisions=decisions)
async def test_arbitrary_cancel_and_resume_requests_never_break_the_gateway(
    known: Known, run: str, user: str, decisions: list[agent_pb2.ApprovalDecision]
) -> None:
    cancel = agent_pb2.CancelRequest(run_id=known.resolve(run), user_id=user)
    code, details = await unary_status(known.stack.agent.Cancel(cancel, timeout=RPC_TIMEOUT_S))
    check_status(code, details, cancel)
    resume = agent_pb2.ResumeRequest(run_id=known.resolve(run), user_id=user, decisions=decisions)
    code, details, events = await stream_status(known.stack.agent.Resume(resume, timeout=RPC_TIMEOUT_S))
    check_status(code, details, resume)
    check_events(events, resume)


# --- 2. arbitrary tool arguments through the executor ----------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Point:
    """A point.

    Attributes:
        x: across.
        y: up.
        label: a name.
    """

    x: float
    y: float
    label: str | None = None


class Options(TypedDict):
    depth: int
    verbose: NotRequired[bool]


@tool
def typed_mix(
    count: int,
    ratio: float,
    flag: bool,
    name: str,
    tags: list[str],
    weights: dict[str, float],
    color: Color,
    mode: Literal["a", "b", 1],
    point: Point,
    opts: Options,
    maybe: int | None = None,
) -> str:
    """Receive one of everything; fails (EXCEPTION) only if a value arrives with the wrong Python type.

    Args:
        count: an integer.
        ratio: a number.
        flag: a boolean.
        name: a string.
        tags: strings.
        weights: numbers by name.
        color: a colour.
        mode: a mode.
        point: a point.
        opts: options.
        maybe: an optional integer.
    """
    checks = {
        "count": type(count) is int,
        "ratio": type(ratio) is float,
        "flag": type(flag) is bool,
        "name": type(name) is str,
        "tags": all(type(t) is str for t in tags),
        "weights": all(type(w) is float for w in weights.values()),
        "color": isinstance(color, Color),
        "mode": mode in ("a", "b", 1) and type(mode) is not bool,
        "point": isinstance(point, Point) and type(point.x) is float and type(point.y) is float,
        "opts": type(opts["depth"]) is int,
        "maybe": maybe is None or type(maybe) is int,
    }
    wrong = [key for key, ok in checks.items() if not ok]
    if wrong:
        raise TypeError(f"converted to the wrong types: {wrong}")
    return "fine"


def tool_registry() -> ToolRegistry:
    database = Path(tempfile.mkdtemp(prefix="agentloop-prop-")) / "sample.db"
    registry = default_registry(ToolSettings(sql_database=str(database)))
    registry.register(typed_mix)
    return registry


REGISTRY = tool_registry()
TYPED = frozenset({"typed_mix"})
TARGET_TOOLS = ["calculator", "current_time", "sql_query", "sql_describe_table", "typed_mix"]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
numbers = st.one_of(st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False))
VALID_VALUES: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "calculator": {
        "expression": st.one_of(
            st.text(max_size=40),
            st.sampled_from(
                ["1 + 2", "2 ** 10", "sqrt(-1)", "1 / 0", "9 ** 9 ** 9", "(" * 200, "round(1, 2.5)"]
            ),
            st.builds(lambda a, op, b: f"{a} {op} {b}", numbers, st.sampled_from("+-*/%"), numbers),
        )
    },
    "current_time": {
        "timezone": st.one_of(
            st.text(max_size=30), st.sampled_from(["UTC", "Europe/Paris", "../etc/passwd", "x" * 5000])
        )
    },
    "sql_query": {
        "query": st.one_of(
            st.text(max_size=40),
            st.sampled_from(
                [
                    "SELECT * FROM customers",
                    "SELECT 1; SELECT 2",
                    "DELETE FROM customers",
                    "DROP TABLE orders",
                    "PRAGMA writable_schema = 1",
                    "ATTACH DATABASE ':memory:' AS x",
                    "SELECT load_extension('x')",
                    "SELECT zeroblob(2000000)",
                ]
            ),
        ),
        "limit": st.integers(),
    },
    "sql_describe_table": {
        "table": st.one_of(
            st.text(max_size=30), st.sampled_from(["customers", "CUSTOMERS", 'x"; DROP TABLE y; --'])
        )
    },
    "typed_mix": {
        "count": st.one_of(st.integers(), st.integers(-(10**6), 10**6).map(float)),
        "ratio": st.one_of(st.integers(), st.floats(), st.just(10**400)),  # 10**400: no float holds it
        "flag": st.booleans(),
        "name": st.text(max_size=20),
        "tags": st.lists(st.text(max_size=5), max_size=3),
        "weights": st.dictionaries(st.text(max_size=5), numbers, max_size=3),
        "color": st.sampled_from(["red", "green"]),
        "mode": st.sampled_from(["a", "b", 1]),
        "point": st.fixed_dictionaries(
            {"x": numbers, "y": numbers}, optional={"label": st.one_of(st.none(), st.text(max_size=5))}
        ),
        "opts": st.fixed_dictionaries({"depth": st.integers()}, optional={"verbose": st.booleans()}),
        "maybe": st.one_of(st.none(), st.integers()),
    },
}
REQUIRED = {
    "calculator": {"expression"},
    "sql_query": {"query"},
    "sql_describe_table": {"table"},
    "typed_mix": {"count", "ratio", "flag", "name", "tags", "weights", "color", "mode", "point", "opts"},
}


@st.composite
def shaped_arguments(draw: st.DrawFn, name: str) -> str:
    """JSON objects with the tool's own property names: valid values, wrong values, extra or missing keys."""
    fields = VALID_VALUES[name]
    required = REQUIRED.get(name, set())
    obj: dict[str, Any] = {}
    for key, valid in fields.items():
        if key in required or draw(st.booleans()):
            obj[key] = draw(valid if draw(st.integers(0, 4)) else json_values)
    if obj and draw(st.integers(0, 5)) == 0:
        del obj[draw(st.sampled_from(sorted(obj)))]
    if draw(st.integers(0, 5)) == 0:
        obj[draw(st.text(max_size=8))] = draw(json_values)
    return json.dumps(obj, ensure_ascii=draw(st.booleans()))


def arguments_for(name: str) -> st.SearchStrategy[str]:
    shaped = shaped_arguments(name) if name in VALID_VALUES else st.just("{}")
    return st.one_of(
        shaped,
        shaped,
        shaped.flatmap(lambda text: st.integers(0, len(text)).map(lambda cut: text[:cut])),
        st.text(max_size=40),
        json_values.map(json.dumps),
        st.sampled_from(
            ["", "{}", "null", "[]", '"x"', "NaN", "{", '{"a": 1}{', "1" * 5000, "[" * 5000 + "]" * 5000]
        ),
    )


@st.composite
def tool_batches(draw: st.DrawFn) -> list[common_pb2.ToolCall]:
    calls = []
    for i in range(draw(st.integers(1, 4))):
        name = draw(st.one_of(st.sampled_from(TARGET_TOOLS), st.sampled_from(TARGET_TOOLS), texts))
        calls.append(common_pb2.ToolCall(id=f"call-{i}", name=name, arguments_json=draw(arguments_for(name))))
    return calls


def expected_outcome(tool: Tool | None, arguments_json: str) -> str:
    """What must become of a call: unknown tool, malformed arguments, invalid arguments, or a valid call."""
    if tool is None:
        return "unknown"
    if arguments_json:
        try:
            arguments = json.loads(arguments_json)
        except (ValueError, RecursionError):
            return "malformed"
    else:
        arguments = {}
    if not isinstance(arguments, dict):
        return "malformed"
    try:
        valid = Draft202012Validator(tool.parameters).is_valid(arguments)
    except RecursionError:
        valid = False
    return "valid" if valid else "invalid"


Kind = common_pb2.ToolErrorKind
EXPECTED_KINDS = {
    "unknown": {Kind.TOOL_ERROR_KIND_UNKNOWN_TOOL},
    "malformed": {Kind.TOOL_ERROR_KIND_MALFORMED_ARGUMENTS},
    "invalid": {Kind.TOOL_ERROR_KIND_INVALID_ARGUMENTS},
}


def one_call(name: str, arguments_json: str) -> list[common_pb2.ToolCall]:
    return [common_pb2.ToolCall(id="call-0", name=name, arguments_json=arguments_json)]


VALID_TYPED_ARGUMENTS = {
    "count": 1,
    "ratio": 0.5,
    "flag": True,
    "name": "n",
    "tags": ["t"],
    "weights": {"w": 1},
    "color": "red",
    "mode": "a",
    "point": {"x": 1, "y": 2},
    "opts": {"depth": 3},
}


@PROPERTY_SETTINGS
@given(calls=tool_batches())
@example(calls=one_call("typed_mix", json.dumps(VALID_TYPED_ARGUMENTS)))
# Valid JSON that Python's json module refuses: more than 4300 digits, or nested too deeply.
@example(calls=one_call("calculator", "1" * 5000))
@example(calls=one_call("calculator", '{"expression": ' + "[" * 5000 + "]" * 5000 + "}"))
# Schema-valid (a JSON number) but beyond any float.
@example(calls=one_call("typed_mix", json.dumps({**VALID_TYPED_ARGUMENTS, "ratio": 10**400})))
async def test_arbitrary_tool_arguments_end_with_exactly_one_result_per_call(
    calls: list[common_pb2.ToolCall],
) -> None:
    events = [event async for event in execute(REGISTRY, calls, timeout_s=5, max_concurrency=4)]

    assert len(events) == 2 * len(calls)
    by_call = {c.id: c for c in calls}
    started = [e for e in events if isinstance(e, tools_pb2.ToolStarted)]
    results = [e for e in events if isinstance(e, common_pb2.ToolResult)]
    assert sorted(e.tool_call_id for e in started) == sorted(by_call)
    assert sorted(r.tool_call_id for r in results) == sorted(by_call)
    position = {(type(e).__name__, e.tool_call_id): i for i, e in enumerate(events)}
    for result in results:
        call = by_call[result.tool_call_id]
        assert position[("ToolResult", call.id)] > position[("ToolStarted", call.id)]
        assert result.name == call.name
        assert result.is_error == (result.error_kind != Kind.TOOL_ERROR_KIND_NONE), result
        assert result.duration.nanos >= 0
        assert result.duration.ToMilliseconds() >= 0
        if result.is_error:
            assert result.content, result
        outcome = expected_outcome(REGISTRY.get(call.name), call.arguments_json)
        where = (
            f"{call.name}({call.arguments_json[:200]!r}) -> {Kind.Name(result.error_kind)}: {result.content}"
        )
        if outcome in EXPECTED_KINDS:
            assert result.is_error, where
            assert result.error_kind in EXPECTED_KINDS[outcome], where
        elif call.name in TYPED:
            # Schema-valid arguments reach the function with the declared Python types.
            assert not result.is_error or result.error_kind == Kind.TOOL_ERROR_KIND_INVALID_ARGUMENTS, where
        else:
            # The tool ran: it answered, or refused the values itself.
            assert not result.is_error or result.error_kind == Kind.TOOL_ERROR_KIND_EXCEPTION, where


def test_the_typed_tool_schema_is_what_the_strategies_assume() -> None:
    typed = REGISTRY.get("typed_mix")
    assert typed is not None
    assert set(typed.parameters["required"]) == REQUIRED["typed_mix"]
    assert set(typed.parameters["properties"]) == set(VALID_VALUES["typed_mix"])
    assert dataclasses.is_dataclass(Point)
