"""The Reasoner gRPC service: one OpenAI-compatible chat-completions call per RPC.

One `AsyncOpenAI` client lives for the whole process (connection pooling and
keep-alive are what make a call cheap); each RPC only builds its request
payload. The payload is already in the wire shape, so it goes through the
client's `post` (the SDK's documented path for raw bodies) rather than
`chat.completions.create`, whose per-call recursive parameter transform costs
time proportional to the conversation length — several milliseconds of CPU per
step on long runs. Retries, auth, timeouts, error types and response models are
still the SDK's; responses are decoded JSON rather than pydantic models,
which halves the cost of a streamed call. Endpoint failures become typed errors, which the shared
interceptor maps to gRPC status codes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import grpc
import openai
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from agentloop.errors import (
    AgentloopError,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    Unavailable,
)
from agentloop.security import Authenticator, TlsSettings, service_authenticator, service_token_from_env
from agentloop.serving import Server, serve_service
from agentloop.settings import ReasonerSettings
from agentloop.telemetry import Telemetry
from agentloop.v1 import reasoner_pb2, reasoner_pb2_grpc
from reasoner_svc.convert import (
    StreamAssembler,
    completion_size,
    request_kwargs,
    result_from_completion,
)

log = logging.getLogger(__name__)

SERVICE_NAME = reasoner_pb2.DESCRIPTOR.services_by_name["Reasoner"].full_name
# Below this many seconds of caller deadline a model call cannot usefully start.
_MIN_USEFUL_DEADLINE_S = 0.05


def map_openai_error(exc: Exception, base_url: str) -> AgentloopError:
    """The typed error for an exception raised by the openai client."""
    if isinstance(exc, openai.APITimeoutError) and not _could_not_connect(exc):
        return DeadlineExceeded(f"model endpoint {base_url} did not answer in time")
    if isinstance(exc, openai.APIConnectionError):
        return Unavailable(f"model endpoint {base_url} is unreachable: {exc}")
    if isinstance(exc, openai.RateLimitError):
        return ResourceExhausted(
            f"model endpoint rate-limited the request (429) after retries: {exc.message}"
        )
    if isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
        return InvalidArgument("params", f"model endpoint rejected the request: {exc.message}")
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return FailedPrecondition(f"model endpoint refused the configured API key: {exc.message}")
    if isinstance(exc, openai.NotFoundError):
        return NotFound(f"model endpoint answered 404 (unknown model?): {exc.message}")
    if isinstance(exc, openai.APIStatusError):
        return Unavailable(f"model endpoint failed with HTTP {exc.status_code}: {exc.message}")
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return Unavailable(f"model endpoint sent a malformed response: {exc}")
    if isinstance(exc, openai.OpenAIError):
        return Unavailable(f"model call failed: {exc}")
    return Unavailable(f"model call failed: {type(exc).__name__}: {exc}")


def _could_not_connect(exc: BaseException) -> bool:
    """Whether a timeout error is really a refused or failed connection.

    The SDK's aiohttp transport reports any failure to connect (refused, no
    route, DNS) as a connect *timeout*; aiohttp's own exception, further down
    the chain, says which it was (its real connect timeouts are another type).
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, aiohttp.ClientConnectorError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _error_type(exc: BaseException) -> str:
    """The endpoint error's type name; a failed connection reported as a timeout is a connection error."""
    if isinstance(exc, openai.APITimeoutError) and _could_not_connect(exc):
        return openai.APIConnectionError.__name__
    return type(exc).__name__


class ReasonerService(reasoner_pb2_grpc.ReasonerServicer):
    """Serves Step and StreamStep through one shared openai client."""

    def __init__(
        self, settings: ReasonerSettings, client: openai.AsyncOpenAI, telemetry: Telemetry | None = None
    ) -> None:
        self._settings = settings
        self._client = client
        self._telemetry = telemetry or Telemetry.noop()
        endpoint = urlsplit(settings.base_url)
        self._server: dict[str, AttributeValue] = {"server.address": endpoint.hostname or ""}
        if endpoint.port is not None:
            self._server["server.port"] = endpoint.port

    @contextlib.contextmanager
    def _chat_span(self, body: dict[str, Any], streamed: bool) -> Iterator[trace.Span]:
        """The model call's span, named and attributed by the GenAI semantic conventions."""
        model = str(body.get("model", ""))
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": model,
            "agentloop.streamed": streamed,
            **self._server,
        }
        if "temperature" in body:
            attributes["gen_ai.request.temperature"] = float(body["temperature"])
        if "max_tokens" in body:
            attributes["gen_ai.request.max_tokens"] = int(body["max_tokens"])
        with self._telemetry.span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes) as span:
            try:
                yield span
            except Exception as exc:
                # The endpoint's own error (an openai exception) rather than the typed one it became.
                span.set_attribute("error.type", _error_type(exc.__cause__ or exc))
                raise
            except asyncio.CancelledError:
                span.set_attribute("error.type", "cancelled")
                raise

    def _record(self, span: trace.Span, result: reasoner_pb2.StepResult, request_model: str) -> None:
        """Response attributes on the span; token counts into agentloop.tokens."""
        usage = result.usage
        model = result.model or request_model
        span.set_attributes(
            {
                "gen_ai.response.model": model,
                "gen_ai.usage.input_tokens": usage.prompt_tokens,
                "gen_ai.usage.output_tokens": usage.completion_tokens,
                "gen_ai.response.finish_reasons": [result.finish_reason] if result.finish_reason else [],
            }
        )
        if usage.reasoning_tokens:
            span.set_attribute("agentloop.usage.reasoning_tokens", usage.reasoning_tokens)
        self._telemetry.tokens.add(usage.prompt_tokens, {"kind": "input", "model": model})
        self._telemetry.tokens.add(usage.completion_tokens, {"kind": "output", "model": model})

    def _too_slow(self, timeout: float) -> DeadlineExceeded:
        return DeadlineExceeded(
            f"model endpoint {self._settings.base_url} did not finish its answer within {timeout:g} s "
            "(AGENTLOOP_MODEL_TIMEOUT_S, or the caller's shorter deadline)"
        )

    def _check_size(self, size: int) -> None:
        """Refuse a completion over AGENTLOOP_MAX_COMPLETION_BYTES before holding any more of it."""
        limit = self._settings.max_completion_bytes
        if size > limit:
            raise ResourceExhausted(
                f"the model's answer passed {limit} bytes (AGENTLOOP_MAX_COMPLETION_BYTES) and was stopped; "
                "ask for a shorter answer or set max_tokens"
            )

    def _timeout(self, context: grpc.aio.ServicerContext) -> float:
        """The call's timeout: the configured one, shortened to the caller's deadline."""
        timeout = self._settings.timeout_s
        remaining = context.time_remaining()
        if remaining is not None:
            if remaining < _MIN_USEFUL_DEADLINE_S:
                raise DeadlineExceeded("the caller's deadline leaves no time for a model call")
            timeout = min(timeout, remaining)
        return timeout

    async def Step(
        self, request: reasoner_pb2.StepRequest, context: grpc.aio.ServicerContext
    ) -> reasoner_pb2.StepResponse:
        body = request_kwargs(request.params, self._settings.model)
        timeout = self._timeout(context)
        options: Any = {"timeout": timeout}
        with self._chat_span(body, streamed=False) as span:
            try:
                # The client's timeout bounds each read; this bounds the whole call.
                async with asyncio.timeout(timeout):
                    completion = await self._client.post(
                        "/chat/completions", body=body, cast_to=dict, options=options
                    )
            except TimeoutError:
                raise self._too_slow(timeout) from None
            except (openai.OpenAIError, ValueError) as exc:
                raise map_openai_error(exc, self._settings.base_url) from exc
            result = result_from_completion(completion)
            self._check_size(completion_size(result))
            self._record(span, result, body["model"])
        return reasoner_pb2.StepResponse(result=result)

    async def StreamStep(
        self, request: reasoner_pb2.StreamStepRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[reasoner_pb2.StreamStepResponse]:
        body = request_kwargs(request.params, self._settings.model)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        timeout = self._timeout(context)
        options: Any = {"timeout": timeout}
        # The client's timeout bounds each read, so a trickling stream would never hit it: every
        # wait for the endpoint is also bounded by one deadline for the whole call.
        deadline = asyncio.get_running_loop().time() + timeout
        acc = StreamAssembler()
        with self._chat_span(body, streamed=True) as span:
            try:
                async with asyncio.timeout_at(deadline):
                    stream = await self._client.post(
                        "/chat/completions",
                        body=body,
                        cast_to=dict,
                        options=options,
                        stream=True,
                        stream_cls=openai.AsyncStream[dict[str, Any]],
                    )
                try:
                    chunks = aiter(stream)
                    while True:
                        async with asyncio.timeout_at(deadline):
                            chunk = await anext(chunks, None)
                        if chunk is None:
                            break
                        reasoning, content = acc.add_chunk(chunk)
                        self._check_size(acc.size)
                        if reasoning:
                            yield reasoner_pb2.StreamStepResponse(reasoning_token=reasoning)
                        if content:
                            yield reasoner_pb2.StreamStepResponse(token=content)
                finally:
                    await stream.close()
            except TimeoutError:
                raise self._too_slow(timeout) from None
            except (openai.OpenAIError, ValueError) as exc:
                raise map_openai_error(exc, self._settings.base_url) from exc
            result = acc.result()
            self._record(span, result, body["model"])
        yield reasoner_pb2.StreamStepResponse(result=result)


def make_client(settings: ReasonerSettings) -> openai.AsyncOpenAI:
    """The process-wide openai client; retries 429/5xx/connection errors with backoff.

    Its HTTP transport is the SDK's aiohttp one (`DefaultAioHttpClient`, the
    `openai[aiohttp]` extra; aiohttp is a dependency anyway, for the scripted
    model server): the default httpx transport was a third of this service's
    CPU per model call, and aiohttp takes about a sixth of the service's CPU
    per step off. Same SDK behaviour either way: retries, timeouts, streaming.
    """
    return openai.AsyncOpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout_s,
        max_retries=settings.max_retries,
        http_client=openai.DefaultAioHttpClient(timeout=settings.timeout_s),
    )


async def create_server(
    settings: ReasonerSettings,
    client: openai.AsyncOpenAI | None = None,
    telemetry: Telemetry | None = None,
    tls: TlsSettings | None = None,
    authenticator: Authenticator | None = None,
) -> Server:
    """Start a Reasoner on settings.host:settings.port (0 = any free port).

    With an ``authenticator`` (see security.service_authenticator) every call
    but health and reflection must bear the service token: the Reasoner spends
    the configured API key, so only the gateway may call it. A ``client`` given
    here stays the caller's to close; the one made without it closes with the server.
    """
    async with Server().starting() as server:
        if client is None:
            client = make_client(settings)
            server.resources.push_async_callback(client.close)
        service = ReasonerService(settings, client, telemetry)
        await server.listen(
            lambda grpc_server: reasoner_pb2_grpc.add_ReasonerServicer_to_server(service, grpc_server),
            [SERVICE_NAME],
            settings.host,
            settings.port,
            telemetry,
            tls=tls,
            authenticator=authenticator,
        )
    log.info("reasoner uses model %s at %s", settings.model, settings.base_url)
    return server


async def serve(settings: ReasonerSettings) -> None:
    """Run a Reasoner until SIGINT/SIGTERM; spans and metrics are flushed on the way out."""
    tls, authenticator = TlsSettings.from_env(), service_authenticator(service_token_from_env())
    await serve_service(
        "reasoner",
        "agentloop-reasoner",
        lambda telemetry: create_server(settings, telemetry=telemetry, tls=tls, authenticator=authenticator),
    )
