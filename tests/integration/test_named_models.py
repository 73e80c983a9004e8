"""Named models, the Responses API and fallback, through the real services.

Scripted model servers over HTTP → the Reasoner (its models file) → the gateway → a gRPC client;
the store is real (SQLite and Postgres where the thread is read back).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agentloop.kernel.errors import status_from_metadata
from agentloop.scripted_model import Fault, Scenario, Script, ScriptedModelServer, ScriptedToolCall, Turn
from agentloop.testing import Stack, final_of, running_stack
from agentloop.v1 import agent_pb2, common_pb2, reasoner_pb2
from tests.integration.test_startup_errors import _agentloop, _error_lines

pytestmark = pytest.mark.integration

PARALLEL = Script(
    scenarios=(
        Scenario(
            match="multiply and time",
            turns=(
                Turn(
                    reasoning="Two independent lookups: run both at once.",
                    content="Checking both.",
                    tool_calls=(
                        ScriptedToolCall("calculator", {"expression": "1234 * 5678"}),
                        ScriptedToolCall("current_time", {"timezone": "UTC"}),
                    ),
                ),
                Turn(reasoning="Both came back.", content="1234 × 5678 = {{tool:calculator}}."),
            ),
        ),
        Scenario(match="", turns=(Turn(content="Answered by the main server."),)),
    )
)
BACKUP = Script(scenarios=(Scenario(match="", turns=(Turn(content="Answered by the backup."),)),))


def _models_file(tmp_path: Path, models: dict[str, Any], **top: Any) -> str:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"models": models, **top}))
    return str(path)


def _kinds(events: list[agent_pb2.RunEvent]) -> list[str]:
    return [str(e.WhichOneof("event")) for e in events]


def _decisions(events: list[agent_pb2.RunEvent], kind: int) -> list[str]:
    return [
        e.decision.detail for e in events if e.WhichOneof("event") == "decision" and e.decision.kind == kind
    ]


def _responses_requests(stack: Stack) -> list[dict[str, Any]]:
    return [r for r in stack.model.requests if "input" in r]


def _reasoning_items(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in request["input"] if item.get("type") == "reasoning"]


async def test_a_responses_run_with_parallel_tools_reasoning_and_tokens_keeps_its_reasoning_across_runs(
    tmp_path: Path, database_url: str
) -> None:
    models = _models_file(tmp_path, {"thinker": {"protocol": "responses"}})
    async with running_stack(
        PARALLEL, database_url=database_url, reasoner_overrides={"models_file": models}
    ) as stack:
        events = await stack.run("multiply and time please", model="thinker")
        final = final_of(events)
        assert final.final_reply == "1234 × 5678 = 7006652."
        first_step = [
            e.llm_token for e in events if e.WhichOneof("event") == "llm_token" and e.llm_token.step == 0
        ]
        assert "".join(t.reasoning_token for t in first_step) == "Two independent lookups: run both at once."
        assert "".join(t.token for t in first_step) == "Checking both."
        assert len([t for t in first_step if t.token]) > 1  # streamed in pieces, as they came
        started = [e.tool_start.name for e in events if e.WhichOneof("event") == "tool_start"]
        assert sorted(started) == ["calculator", "current_time"]
        assert final.metadata.tool_calls == 2
        assert final.metadata.steps_taken == 1
        assert list(final.metadata.models) == ["thinker"]
        assert final.metadata.usage.reasoning_tokens > 0

        # Every request went to /v1/responses with nothing stored; the follow-up carried the
        # first turn's encrypted reasoning back (the scripted server checks it as OpenAI does).
        sent = _responses_requests(stack)
        assert len(sent) == len(stack.model.requests) == 2
        assert all(r["store"] is False and r["include"] == ["reasoning.encrypted_content"] for r in sent)
        carried = _reasoning_items(sent[1])
        assert len(carried) == 1
        assert carried[0]["encrypted_content"].startswith("enc_")

        # A second run on the thread reads the conversation back from the store: the same
        # reasoning items, in their places, reach the model again.
        thread = events[0].thread_id
        stack.model.clear_requests()
        again = await stack.run("multiply and time again", thread_id=thread, model="thinker")
        assert final_of(again).final_reply == "1234 × 5678 = 7006652."
        history = _responses_requests(stack)[0]["input"]
        assert [i for i in _reasoning_items({"input": history})][:1] == carried
        at = history.index(carried[0])
        assert [history[at + 1]["type"], history[at + 2]["type"], history[at + 3]["type"]] == [
            "message",
            "function_call",
            "function_call",
        ]
        view = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=thread), timeout=10)
        stored = next(m for m in view.messages if m.role == common_pb2.ROLE_ASSISTANT)
        assert json.loads(stored.provider_fields_json)["responses_output"][0] == carried[0]


async def test_without_its_reasoning_items_the_follow_up_is_refused_as_openai_refuses_it(
    tmp_path: Path,
) -> None:
    """The check behind the test above can fail: a conversation that lost its reasoning is refused."""
    models = _models_file(tmp_path, {"thinker": {"protocol": "responses"}})
    async with running_stack(PARALLEL, reasoner_overrides={"models_file": models}) as stack:
        events = await stack.run("multiply and time please", model="thinker")
        thread = events[0].thread_id
        view = await stack.agent.GetThread(agent_pb2.GetThreadRequest(thread_id=thread), timeout=10)
        history = [m for m in view.messages]
        stripped = []
        for message in history:
            copy = common_pb2.Message()
            copy.CopyFrom(message)
            if copy.provider_fields_json:
                kept = json.loads(copy.provider_fields_json)["responses_output"]
                copy.provider_fields_json = json.dumps(
                    {"responses_output": [i for i in kept if i["type"] != "reasoning"]}
                )
            stripped.append(copy)
        params = reasoner_pb2.CompletionParams(model="thinker", messages=stripped)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.reasoner_stub.Step(reasoner_pb2.StepRequest(params=params), timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "was provided without its required 'reasoning' item" in (info.value.details() or "")


async def test_one_reasoner_serves_models_by_name_each_in_its_protocol(tmp_path: Path) -> None:
    async with ScriptedModelServer(BACKUP) as other:
        models = _models_file(
            tmp_path,
            {
                "thinker": {"protocol": "responses"},
                "elsewhere": {"base_url": other.base_url, "model": "other-model", "protocol": "chat"},
            },
        )
        async with running_stack(PARALLEL, reasoner_overrides={"models_file": models}) as stack:
            assert (
                final_of(await stack.run("hello", model="thinker")).final_reply
                == "Answered by the main server."
            )
            assert final_of(await stack.run("hello")).final_reply == "Answered by the main server."
            assert (
                final_of(await stack.run("hello", model="elsewhere")).final_reply == "Answered by the backup."
            )
            # The default model speaks chat completions; "thinker" the Responses API.
            assert ["input" in r for r in stack.model.requests] == [True, False]
            assert [r["model"] for r in stack.model.requests] == ["thinker", "scripted"]
            assert [r["model"] for r in other.requests] == ["other-model"]
            listed = await stack.reasoner_stub.ListModels(reasoner_pb2.ListModelsRequest(), timeout=10)
            assert [(m.name, m.protocol) for m in listed.models] == [
                ("elsewhere", "chat"),
                ("scripted", "chat"),
                ("thinker", "responses"),
            ]
            assert (listed.default_model, listed.any_name) == ("scripted", False)


def _reason(error: grpc.aio.AioRpcError) -> str:
    from google.rpc import error_details_pb2

    for detail in status_from_metadata(error.trailing_metadata() or ()).details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info.reason
    return ""


async def test_an_unknown_model_is_refused_at_the_request_naming_the_field(tmp_path: Path) -> None:
    models = _models_file(tmp_path, {"thinker": {"protocol": "responses"}})
    async with running_stack(PARALLEL, reasoner_overrides={"models_file": models}) as stack:
        request = agent_pb2.RunRequest(input="hello", options=agent_pb2.RunOptions(model="gpt-9"))
        for call in (stack.agent.Invoke(request, timeout=10), _drain(stack.agent.Run(request, timeout=10))):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await call
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert info.value.details() == "options.model: unknown model 'gpt-9' (known: scripted, thinker)"
            assert _reason(info.value) == "UNKNOWN_MODEL"
        assert stack.model.request_count == 0  # refused before any model call
        # The Reasoner itself refuses it too, naming its own field.
        params = reasoner_pb2.CompletionParams(
            model="gpt-9", messages=[common_pb2.Message(role=common_pb2.ROLE_USER, content="x")]
        )
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stack.reasoner_stub.Step(reasoner_pb2.StepRequest(params=params), timeout=10)
        assert info.value.details() == "params.model: unknown model 'gpt-9' (known: scripted, thinker)"
        assert stack.model.request_count == 0


async def _drain(call: Any) -> None:
    async for _ in call:
        pass


async def test_without_a_models_file_any_name_still_reaches_the_endpoint() -> None:
    async with running_stack(PARALLEL) as stack:
        events = await stack.run("hello", model="tiny-model")
        assert final_of(events).final_reply == "Answered by the main server."
        assert stack.model.requests[-1]["model"] == "tiny-model"
        assert list(final_of(events).metadata.models) == ["tiny-model"]


@pytest.fixture
async def failing() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer(BACKUP) as server:
        yield server


def _primary(failing: ScriptedModelServer, **fields: Any) -> dict[str, Any]:
    return {"base_url": failing.base_url, "max_retries": 1, "fallback": ["scripted"], **fields}


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
async def test_a_failing_model_falls_back_after_its_own_budget_and_the_switch_is_visible(
    tmp_path: Path, failing: ScriptedModelServer, database_url: str, streamed: bool
) -> None:
    failing.set_script(Script(scenarios=BACKUP.scenarios, faults=(Fault("status", status=500, times=10),)))
    models = _models_file(tmp_path, {"primary": _primary(failing, protocol="responses")})
    mode = agent_pb2.STREAM_MODE_ALL_STEPS if streamed else agent_pb2.STREAM_MODE_NONE
    async with running_stack(
        PARALLEL, database_url=database_url, reasoner_overrides={"models_file": models}
    ) as stack:
        events = await stack.run("multiply and time please", model="primary", stream_mode=mode)
        final = final_of(events)
        assert final.final_reply == "1234 × 5678 = 7006652."
        # Each of the run's two steps: the primary's budget (1 + max_retries), then the fallback.
        assert failing.request_count == 4
        assert stack.model.request_count == 2
        assert list(final.metadata.models) == ["scripted"]
        switches = _decisions(events, agent_pb2.DECISION_KIND_MODEL_FALLBACK)
        assert len(switches) == 2
        assert switches[0].startswith("'primary' failed (UNAVAILABLE: model endpoint ")
        assert switches[0].endswith("; 'scripted' answered")
        # The decision comes before the step's tool events.
        kinds = _kinds(events)
        assert kinds.index("decision") < kinds.index("tool_start")
        # What the run's metadata says is what the store holds.
        view = await stack.agent.GetThread(
            agent_pb2.GetThreadRequest(thread_id=events[0].thread_id), timeout=10
        )
        assert list(view.state.metadata.models) == ["scripted"]


async def test_models_that_answered_are_listed_in_first_use_order(
    tmp_path: Path, failing: ScriptedModelServer
) -> None:
    # The primary fails its first step only: the run's answers come from both models.
    failing.set_script(
        Script(
            scenarios=(
                Scenario(match="", turns=(Turn(content="unused"), Turn(content="Primary's answer."))),
            ),
            faults=(Fault("status", status=429, times=2),),
        )
    )
    models = _models_file(tmp_path, {"primary": _primary(failing)})
    async with running_stack(PARALLEL, reasoner_overrides={"models_file": models}) as stack:
        events = await stack.run("multiply and time please", model="primary")
        final = final_of(events)
        assert final.final_reply == "Primary's answer."
        assert list(final.metadata.models) == ["scripted", "primary"]
        switches = _decisions(events, agent_pb2.DECISION_KIND_MODEL_FALLBACK)
        assert len(switches) == 1
        assert "'primary' failed (RESOURCE_EXHAUSTED: " in switches[0]


async def test_a_refused_request_does_not_fall_back(tmp_path: Path, failing: ScriptedModelServer) -> None:
    failing.set_script(Script(scenarios=BACKUP.scenarios, faults=(Fault("status", status=400),)))
    models = _models_file(tmp_path, {"primary": _primary(failing)})
    async with running_stack(PARALLEL, reasoner_overrides={"models_file": models}) as stack:
        events = await stack.run("hello", model="primary")
        assert _kinds(events)[-1] == "error"
        assert events[-1].error.code == 3  # INVALID_ARGUMENT: another model would be refused the same
        assert (failing.request_count, stack.model.request_count) == (1, 0)
        assert not _decisions(events, agent_pb2.DECISION_KIND_MODEL_FALLBACK)


async def test_a_stream_that_broke_after_its_first_token_does_not_fall_back(
    tmp_path: Path, failing: ScriptedModelServer
) -> None:
    failing.set_script(Script(scenarios=BACKUP.scenarios, faults=(Fault("broken_stream"),)))
    models = _models_file(tmp_path, {"primary": _primary(failing)})
    async with running_stack(PARALLEL, reasoner_overrides={"models_file": models}) as stack:
        events = await stack.run("hello", model="primary", stream_mode=agent_pb2.STREAM_MODE_ALL_STEPS)
        assert _kinds(events)[-1] == "error"  # the tokens already shown would be repeated otherwise
        assert stack.model.request_count == 0


@pytest.mark.parametrize(
    ("models", "env", "problem"),
    [
        ("{not json", {}, "not valid JSON"),
        (
            '{"models": {"x": {"api_key_env": "NOT_SET_ANYWHERE"}}}',
            {},
            "model 'x': api_key_env NOT_SET_ANYWHERE is not set",
        ),
        (
            '{"models": {"x": {"protocol": "websocket"}}}',
            {},
            "model 'x': protocol: Input should be 'chat' or 'responses'",
        ),
    ],
)
def test_a_bad_models_file_stops_the_reasoner_with_one_line(
    tmp_path: Path, models: str, env: dict[str, str], problem: str
) -> None:
    path = tmp_path / "models.json"
    path.write_text(models)
    proc = _agentloop(["serve", "reasoner", "--port", "0"], tmp_path, AGENTLOOP_MODELS_FILE=str(path), **env)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = _error_lines(proc.stderr)
    assert len(lines) == 1
    assert lines[0].startswith(f"configuration error: AGENTLOOP_MODELS_FILE {path}: ")
    assert problem in lines[0]


def test_the_reasoner_starts_with_a_good_models_file(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text('[models.thinker]\nprotocol = "responses"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentloop.cli", "serve", "reasoner", "--port", "0"],
        env={"AGENTLOOP_MODELS_FILE": str(path), "PATH": "/usr/bin:/bin", "AGENTLOOP_HOME": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if "listening" in line or len(seen) > 50:
                break
        assert any(
            "serves model thinker (thinker)" in line and "responses protocol" in line for line in seen
        ), seen
    finally:
        proc.terminate()
        proc.wait(timeout=30)
