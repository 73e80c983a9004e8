"""An OpenAI-compatible HTTP server that answers chat completions and Responses API calls from a script.

It speaks the real wire protocol (JSON and SSE over HTTP), so whatever sits in front of it, the
official ``openai`` client included, is exercised end to end without a real model: agent loops
become deterministic, failures can be injected on demand, and benchmarks measure the runtime
rather than a provider.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import deque
from collections.abc import Mapping
from http import HTTPStatus
from types import TracebackType
from typing import Any

from aiohttp import web

from agentloop.scripted_model.recording import Recording
from agentloop.scripted_model.responses_wire import (
    ENCRYPTED_REASONING,
    Issued,
    ResponseWriter,
    error_event,
    input_problem,
    messages_from_input,
    reasoning_problem,
)
from agentloop.scripted_model.script import Fault, Latency, Script, Turn
from agentloop.scripted_model.wire import (
    DONE,
    Pieces,
    StreamEvents,
    completion_body,
    error_body,
    prompt_tokens,
    stream_events,
)

MODEL_ID = "scripted"
"""The one model ``GET /v1/models`` lists, and the model reported when a request names none."""

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
_JSON = "application/json"
_MAX_BODY = 64 * 1024 * 1024
# Headers of a recorded answer that described its transport, not its content: aiohttp sets its own.
_HOP_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive"}
)
_TRUNCATED = Turn(content="This answer is cut off before")
_MAX_ISSUED = 65536
"""Reasoning items remembered for checking follow-ups; the oldest are forgotten past this many."""


def _error(
    status: int,
    message: str,
    error_type: str = "invalid_request_error",
    *,
    code: str | None = None,
    param: str | None = None,
) -> web.Response:
    headers = {"retry-after": "0"} if status == HTTPStatus.TOO_MANY_REQUESTS else None
    return web.Response(
        status=status, body=error_body(message, error_type, code, param), content_type=_JSON, headers=headers
    )


_FAULT_ERRORS: dict[int, tuple[str, str | None, str]] = {
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided (scripted fault)."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached (scripted fault)."),
    500: ("server_error", "server_error", "The server had an error (scripted fault)."),
}


def _fault_error(fault: Fault) -> tuple[str, str | None, str]:
    """(type, code, message) a real provider sends with ``fault.status``."""
    family = 500 if fault.status >= 500 else fault.status
    default = ("invalid_request_error", None, f"HTTP {fault.status} (scripted fault).")
    error_type, code, message = _FAULT_ERRORS.get(family, default)
    return error_type, code, fault.message or message


def _status_fault(fault: Fault) -> web.Response:
    """The error a real provider would send for ``fault.status``, so clients classify it the same way."""
    error_type, code, message = _fault_error(fault)
    return _error(fault.status, message, error_type, code=code)


def request_problem(body: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first thing wrong with a chat-completions body, as (param, message), or None."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages", "'messages' must be a non-empty array of message objects."
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"messages[{index}]", f"'messages[{index}]' must be an object."
        role = message.get("role")
        if role not in _ROLES:
            return (
                f"messages[{index}].role",
                f"Invalid value for 'messages[{index}].role': {role!r}. "
                f"Supported values are: {', '.join(sorted(_ROLES))}.",
            )
    return None


def _wants_usage(body: Mapping[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


class ScriptedModelServer:
    """A scripted chat-completions endpoint on a real socket; use ``async with`` in tests.

    ``requests`` records every JSON body posted to ``/v1/chat/completions`` so tests can assert
    what the client under test actually sent. Pass ``record_requests=False`` for long benchmarks.
    """

    def __init__(
        self, script: Script | None = None, api_key: str | None = None, *, record_requests: bool = True
    ) -> None:
        self.requests: list[dict[str, Any]] = []
        self.prompt_sizes: list[int] = []
        """The prompt size (``usage.prompt_tokens``) of every answered request, in order; always kept."""
        self.first_token_at: list[float] = []
        """``time.perf_counter()`` as each streamed answer's first token goes to the socket; always kept."""
        self.streams_finished = 0
        """Streamed answers written to their end: with ``first_token_at``, how far the model has got."""
        self._record = record_requests
        self._authorization = f"Bearer {api_key}" if api_key else None
        self._script = Script()
        self._faults: deque[Fault] = deque()
        self.set_script(script if script is not None else Script())
        self._ids = itertools.count(1)
        self._issued: dict[str, Issued] = {}
        """Item ids of Responses answers made with reasoning (and the reasoning items' own): what a
        follow-up must send back with them."""
        self._runner: web.AppRunner | None = None
        self._host = "127.0.0.1"
        self._port: int | None = None

    @property
    def script(self) -> Script:
        return self._script

    def set_script(self, script: Script) -> None:
        """Swap the script; its faults replace any that are still pending."""
        self._script = script
        self._faults = deque(fault for fault in script.faults for _ in range(fault.times))

    @property
    def pending_faults(self) -> int:
        return len(self._faults)

    @property
    def request_count(self) -> int:
        return len(self.requests)

    def clear_requests(self) -> None:
        self.requests.clear()
        self.prompt_sizes.clear()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the scripted model server is not started")
        return self._port

    @property
    def base_url(self) -> str:
        """What to pass as ``base_url`` to an OpenAI client."""
        host = self._host
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        elif ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}/v1"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Bind and serve; ``port=0`` picks a free port, which is returned."""
        if self._runner is not None:
            raise RuntimeError("the scripted model server is already started")
        runner = web.AppRunner(self._make_app(), access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port, backlog=1024).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._host = host
        self._port = int(runner.addresses[0][1])
        return self._port

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> ScriptedModelServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/_script", self._get_script)
        app.router.add_put("/_script", self._put_script)
        app.router.add_get("/_requests", self._get_requests)
        app.router.add_delete("/_requests", self._delete_requests)
        app.router.add_get("/_prompt_sizes", self._get_prompt_sizes)
        return app

    def _unauthorized(self, request: web.Request) -> web.Response | None:
        if self._authorization is None or request.headers.get("Authorization") == self._authorization:
            return None
        return _error(401, "Incorrect API key provided.", code="invalid_api_key")

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        stream = body.get("stream") is True
        if self._faults:
            return await self._inject(self._faults.popleft(), request, stream)
        problem = request_problem(body)
        if problem is not None:
            param, message = problem
            return _error(400, message, param=param)

        script = self._script
        messages = body["messages"]
        tools_offered = bool(body.get("tools")) and body.get("tool_choice") != "none"
        turn = script.select(messages, tools_offered)
        if turn.replay is not None:
            self.prompt_sizes.append(prompt_tokens(messages))
            return await self._replay(request, turn.replay, script.latency)
        pieces = Pieces.of(turn)
        model = body.get("model")
        model = model if isinstance(model, str) and model else MODEL_ID
        completion_id = f"chatcmpl-scripted-{next(self._ids)}"
        created = int(time.time())
        prompt = prompt_tokens(messages)
        self.prompt_sizes.append(prompt)

        if stream:
            events = stream_events(
                turn,
                pieces,
                completion_id=completion_id,
                created=created,
                model=model,
                prompt=prompt,
                include_usage=_wants_usage(body),
            )
            return await self._stream(request, events, script.latency)
        if not script.latency.is_zero:
            await asyncio.sleep(script.latency.seconds_for(pieces.completion_tokens))
        payload = completion_body(
            turn, pieces, completion_id=completion_id, created=created, model=model, prompt=prompt
        )
        return web.Response(body=payload, content_type=_JSON)

    async def _body(self, request: web.Request) -> dict[str, Any] | web.Response:
        """The request's JSON object (recorded), or the error answering a request that has none."""
        denied = self._unauthorized(request)
        if denied is not None:
            return denied
        try:
            body = json.loads(await request.read())
        except ValueError:
            return _error(400, "We could not parse the JSON body of your request.")
        if not isinstance(body, dict):
            return _error(400, "The request body must be a JSON object.")
        if self._record:
            self.requests.append(body)
        return body

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/responses``: the script's turn as OpenAI's Responses API answers it."""
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        stream = body.get("stream") is True
        if self._faults:
            return await self._inject(self._faults.popleft(), request, stream, responses=True)
        problem = input_problem(body)
        if problem is not None:
            param, message = problem
            return _error(400, message, param=param)
        refused = reasoning_problem(body["input"], body.get("store") is not False, self._issued)
        if refused is not None:
            return _error(400, refused, param="input")
        script = self._script
        messages = messages_from_input(body["input"])
        tools_offered = bool(body.get("tools")) and body.get("tool_choice") != "none"
        turn = script.select(messages, tools_offered)
        prompt = prompt_tokens(messages)
        self.prompt_sizes.append(prompt)
        if turn.replay is not None:
            return await self._replay(request, turn.replay, script.latency)
        pieces = Pieces.of(turn)
        model = body.get("model")
        include = body.get("include")
        writer = ResponseWriter(
            turn,
            pieces,
            n=next(self._ids),
            created=int(time.time()),
            model=model if isinstance(model, str) and model else MODEL_ID,
            prompt=prompt,
            encrypted=isinstance(include, list) and ENCRYPTED_REASONING in include,
        )
        self._remember(writer.issued())
        if stream:
            return await self._stream(request, writer.events(), script.latency)
        if not script.latency.is_zero:
            await asyncio.sleep(script.latency.seconds_for(pieces.completion_tokens))
        return web.Response(body=writer.body(), content_type=_JSON)

    def _remember(self, issued: Issued) -> None:
        if not issued.reasoning_id:
            return
        for item_id in (issued.reasoning_id, *issued.made_with):
            self._issued[item_id] = issued
        while len(self._issued) > _MAX_ISSUED:
            del self._issued[next(iter(self._issued))]

    async def _stream(
        self, request: web.Request, events: StreamEvents, latency: Latency
    ) -> web.StreamResponse:
        if latency.response_ms:
            await asyncio.sleep(latency.response_ms / 1000)
        response = web.StreamResponse(headers=_SSE_HEADERS)
        try:
            await response.prepare(request)
            if latency.first_token_ms or latency.per_token_ms:
                await response.write(events.head)
                # Each piece is due at a fixed time from the start, as a model's
                # generation does not wait for its client: sleeping a fixed delay
                # after each write would add every wake-up's lateness (a busy
                # machine, the loop's millisecond timers) to the model's time,
                # and benchmarks would count it as the runtime's.
                loop = asyncio.get_running_loop()
                due = loop.time() + latency.first_token_ms / 1000
                for i, token in enumerate(events.tokens):
                    if (wait := due - loop.time()) > 0:
                        await asyncio.sleep(wait)
                    if i == 0:
                        self.first_token_at.append(time.perf_counter())
                    await response.write(token)
                    due += latency.per_token_ms / 1000
                await response.write(events.tail)
            else:
                self.first_token_at.append(time.perf_counter())
                await response.write(events.joined())
            await response.write_eof()
            self.streams_finished += 1
        except ConnectionResetError:
            pass  # the client hung up mid-stream; aiohttp closes the connection quietly
        return response

    async def _replay(
        self, request: web.Request, recording: Recording, latency: Latency
    ) -> web.StreamResponse:
        """A recorded answer as the real server sent it: status, headers, and the body event by event."""
        if latency.response_ms:
            await asyncio.sleep(latency.response_ms / 1000)
        headers = {name: value for name, value in recording.headers if name.lower() not in _HOP_HEADERS}
        headers["Content-Type"] = recording.content_type
        if not recording.is_stream:
            return web.Response(status=recording.status, body=recording.body.encode(), headers=headers)
        response = web.StreamResponse(status=recording.status, headers=headers)
        try:
            await response.prepare(request)
            first = True
            for event in recording.events():
                if latency.per_token_ms and not first:
                    await asyncio.sleep(latency.per_token_ms / 1000)
                first = False
                await response.write(event)
            await response.write_eof()
            self.streams_finished += 1
        except ConnectionResetError:
            pass
        return response

    async def _inject(
        self, fault: Fault, request: web.Request, stream: bool, *, responses: bool = False
    ) -> web.StreamResponse:
        if fault.kind == "status" or (fault.kind == "stream_error" and not stream):
            return _status_fault(fault)
        if fault.kind == "malformed_json" and not stream:
            return web.Response(body=b'{"id": "chatcmpl-malformed", "choices": [', content_type=_JSON)
        if fault.kind == "broken_stream" and not stream:
            # Hanging up before any response is what a crashed upstream or proxy looks like.
            if request.transport is not None:
                request.transport.close()
            return web.Response()
        response = web.StreamResponse(headers=_SSE_HEADERS)
        try:
            await response.prepare(request)
            if fault.kind == "malformed_json":
                await response.write(b"data: {this is not json\n\n" + (b"" if responses else DONE))
                await response.write_eof()
                return response
            partial = self._partial(responses)
            if fault.kind == "stream_error":
                # The error arrives as an event of a 200 stream, after the answer started.
                error_type, code, message = _fault_error(fault)
                if responses:
                    failure = error_event(code or error_type, message)
                else:
                    error = {"message": message, "type": error_type, "code": code or fault.status}
                    failure = f"data: {json.dumps({'error': error})}\n\n".encode()
                await response.write(partial.head + failure)
                await response.write_eof()
                return response
            await response.write(partial.head + partial.tokens[0])
            # Closing mid-body leaves the chunked encoding unterminated and no [DONE]: the client
            # sees a truncated stream, exactly as when a provider drops the connection.
            if request.transport is not None:
                request.transport.close()
        except ConnectionResetError:
            pass
        return response

    def _partial(self, responses: bool) -> StreamEvents:
        """The events of an answer that a fault cuts short."""
        if responses:
            writer = ResponseWriter(
                _TRUNCATED, Pieces.of(_TRUNCATED), next(self._ids), int(time.time()), MODEL_ID, 0, False
            )
            return writer.events()
        return stream_events(
            _TRUNCATED,
            Pieces.of(_TRUNCATED),
            completion_id=f"chatcmpl-scripted-{next(self._ids)}",
            created=int(time.time()),
            model=MODEL_ID,
            prompt=0,
            include_usage=False,
        )

    async def _models(self, request: web.Request) -> web.Response:
        denied = self._unauthorized(request)
        if denied is not None:
            return denied
        model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "agentloop"}
        return web.json_response({"object": "list", "data": [model]})

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _get_script(self, request: web.Request) -> web.Response:
        return web.json_response(self._script.to_dict())

    async def _put_script(self, request: web.Request) -> web.Response:
        try:
            script = Script.from_dict(json.loads(await request.read()))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError too
            return _error(400, f"invalid script: {exc}")
        self.set_script(script)
        return web.json_response({"scenarios": len(script.scenarios), "pending_faults": self.pending_faults})

    async def _get_requests(self, request: web.Request) -> web.Response:
        return web.json_response(self.requests)

    async def _get_prompt_sizes(self, request: web.Request) -> web.Response:
        return web.json_response(self.prompt_sizes)

    async def _delete_requests(self, request: web.Request) -> web.Response:
        cleared = len(self.requests)
        self.clear_requests()
        return web.json_response({"cleared": cleared})
