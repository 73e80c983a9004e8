"""The Reasoner gRPC service: one model step per RPC, within one budget of model requests.

One `AsyncOpenAI` client lives for the whole process (connection pooling and
keep-alive are what make a call cheap); each RPC only builds its request
payload and hands it to the model protocol (reasoner_svc.protocol). The
Reasoner owns retries: a step makes at most 1 + AGENTLOOP_MODEL_MAX_RETRIES
requests to the model, whatever fails (an HTTP error, a refused connection,
an error inside a stream before anything was streamed), and the error it
answers with after that carries gRPC's server pushback, so the gateway's
channel does not multiply the attempts. Endpoint failures become typed errors
(reasoner_svc.endpoint_errors), which the shared interceptor maps to gRPC
status codes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import grpc
import openai
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from agentloop.errors import AgentloopError, DeadlineExceeded, ResourceExhausted
from agentloop.retry import Backoff
from agentloop.security import Authenticator, TlsSettings, service_authenticator, service_token_from_env
from agentloop.serving import Server, serve_service
from agentloop.settings import ReasonerSettings
from agentloop.telemetry import Telemetry
from agentloop.v1 import reasoner_pb2, reasoner_pb2_grpc
from reasoner_svc.assembly import AnswerReader
from reasoner_svc.convert import request_kwargs
from reasoner_svc.endpoint_errors import Failure, classify, could_not_connect
from reasoner_svc.protocol import ChatCompletions, ModelProtocol
from reasoner_svc.think_tags import ThinkMode

log = logging.getLogger(__name__)

SERVICE_NAME = reasoner_pb2.DESCRIPTOR.services_by_name["Reasoner"].full_name
# Below this many seconds of caller deadline a model call cannot usefully start.
_MIN_USEFUL_DEADLINE_S = 0.05
# Between model requests of one step, as the openai SDK waits (0.5 s doubling to 8 s), jittered.
MODEL_BACKOFF = Backoff(base_s=0.5, max_s=8.0, jitter=0.5)
# A Retry-After longer than this is the caller's to honour (RetryInfo), not a wait inside the step.
_MAX_SERVER_WAIT_S = 20.0


def _error_type(exc: BaseException) -> str:
    """The endpoint error's type name; a failed connection reported as a timeout is a connection error."""
    if isinstance(exc, openai.APITimeoutError) and could_not_connect(exc):
        return openai.APIConnectionError.__name__
    return type(exc).__name__


class ReasonerService(reasoner_pb2_grpc.ReasonerServicer):
    """Serves Step and StreamStep through one shared openai client."""

    def __init__(
        self,
        settings: ReasonerSettings,
        client: openai.AsyncOpenAI,
        telemetry: Telemetry | None = None,
        protocol: ModelProtocol | None = None,
    ) -> None:
        self._settings = settings
        self._think = ThinkMode(settings.think_tags)
        self._protocol: ModelProtocol = protocol or ChatCompletions(client, self._think)
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

    def _check_size(self, reader: AnswerReader) -> None:
        """Refuse an answer over its bounds before holding any more of it."""
        limit = self._settings.max_completion_bytes
        if reader.size > limit:
            raise ResourceExhausted(
                f"the model's answer passed {limit} bytes (AGENTLOOP_MAX_COMPLETION_BYTES) and was stopped; "
                "ask for a shorter answer or set max_tokens"
            )
        limit = self._settings.max_provider_field_bytes
        if reader.provider_size > limit:
            raise ResourceExhausted(
                f"model endpoint {self._settings.base_url} sent more than {limit} bytes of fields beyond "
                "the standard answer (AGENTLOOP_MAX_PROVIDER_FIELD_BYTES)"
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

    def _reader(self) -> AnswerReader:
        return AnswerReader(endpoint=self._settings.base_url, think=self._think)

    async def _after_failure(self, exc: Exception, attempt: int, deadline: float, retry: bool) -> None:
        """Wait before the next request when one may help and fits the budget; else raise the answer.

        The error raised is marked retried: the budget is spent (or another request cannot help),
        so the gateway's channel must not send the step again.
        """
        failure: Failure = classify(exc, self._settings.base_url)
        wait = self._wait_before(failure, attempt, deadline) if retry else None
        if wait is None:
            failure.error.retried = True
            raise failure.error from exc
        log.warning(
            "model request %d of %d failed (%s); trying again in %.2f s",
            attempt + 1,
            self._settings.max_retries + 1,
            failure.error.message,
            wait,
        )
        await asyncio.sleep(wait)

    def _wait_before(self, failure: Failure, attempt: int, deadline: float) -> float | None:
        """The wait before another request, or None when there is to be none."""
        if not failure.retryable or attempt >= self._settings.max_retries:
            return None
        wait = failure.wait_s if failure.wait_s is not None else MODEL_BACKOFF.delay_s(attempt)
        left = deadline - asyncio.get_running_loop().time()
        if wait > _MAX_SERVER_WAIT_S or wait + _MIN_USEFUL_DEADLINE_S >= left:
            return None
        return wait

    async def Step(
        self, request: reasoner_pb2.StepRequest, context: grpc.aio.ServicerContext
    ) -> reasoner_pb2.StepResponse:
        body = request_kwargs(request.params, self._settings.model)
        timeout = self._timeout(context)
        deadline = asyncio.get_running_loop().time() + timeout
        with self._chat_span(body, streamed=False) as span:
            for attempt in range(self._settings.max_retries + 1):
                reader = self._reader()
                try:
                    await self._protocol.complete(body, deadline, reader)
                    break
                except TimeoutError:
                    raise self._too_slow(timeout) from None
                except Exception as exc:
                    await self._after_failure(exc, attempt, deadline, retry=True)
            span.set_attribute("agentloop.model.requests", attempt + 1)
            self._check_size(reader)
            result = reader.result()
            self._record(span, result, body["model"])
        return reasoner_pb2.StepResponse(result=result)

    async def StreamStep(
        self, request: reasoner_pb2.StreamStepRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[reasoner_pb2.StreamStepResponse]:
        body = request_kwargs(request.params, self._settings.model)
        timeout = self._timeout(context)
        deadline = asyncio.get_running_loop().time() + timeout
        with self._chat_span(body, streamed=True) as span:
            for attempt in range(self._settings.max_retries + 1):
                reader = self._reader()
                streamed = False
                try:
                    async for reasoning, content in self._protocol.stream(body, deadline, reader):
                        self._check_size(reader)
                        if reasoning:
                            streamed = True
                            yield reasoner_pb2.StreamStepResponse(reasoning_token=reasoning)
                        if content:
                            streamed = True
                            yield reasoner_pb2.StreamStepResponse(token=content)
                    break
                except TimeoutError:
                    raise self._too_slow(timeout) from None
                except AgentloopError:
                    raise
                except Exception as exc:
                    # Once tokens went out, another request would repeat them: this one is the answer.
                    await self._after_failure(exc, attempt, deadline, retry=not streamed)
            span.set_attribute("agentloop.model.requests", attempt + 1)
            result = reader.result()
            self._record(span, result, body["model"])
        yield reasoner_pb2.StreamStepResponse(result=result)


def make_client(settings: ReasonerSettings) -> openai.AsyncOpenAI:
    """The process-wide openai client; its own retries are off (the Reasoner's budget owns them).

    Its HTTP transport is the SDK's aiohttp one (`DefaultAioHttpClient`, the
    `openai[aiohttp]` extra; aiohttp is a dependency anyway, for the scripted
    model server): the default httpx transport was a third of this service's
    CPU per model call, and aiohttp takes about a sixth of the service's CPU
    per step off. Same SDK behaviour either way: timeouts, streaming, error types.
    """
    return openai.AsyncOpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout_s,
        max_retries=0,
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
