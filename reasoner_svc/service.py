"""The Reasoner gRPC service: one model step per RPC, within one budget of model requests per model.

The Reasoner serves its models by name (reasoner_svc.routes): each has an endpoint client that
lives for the whole process (connection pooling and keep-alive are what make a call cheap) and
a protocol (chat completions or the Responses API, reasoner_svc.protocol); each RPC only builds
its request payload and hands it to the protocol. The Reasoner owns retries: a model makes at
most 1 + its max_retries requests in a step, whatever fails (an HTTP error, a refused
connection, an error inside a stream before anything was streamed). When the model gives up
with an error another model may not meet (down, failing, rate-limited, too slow) and it has
fallbacks, the next one answers in its place, with its own budget, and the result says so
(StepResult.answered_by, .fallbacks). The error a step answers with carries gRPC's server
pushback, so the gateway's channel does not multiply the attempts. Endpoint failures become
typed errors (reasoner_svc.endpoint_errors), which the shared interceptor maps to gRPC status
codes.
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

from agentloop.kernel.errors import AgentloopError, DeadlineExceeded, ResourceExhausted
from agentloop.kernel.retry import Backoff
from agentloop.kernel.security import Authenticator, service_authenticator
from agentloop.kernel.serving import Server, serve_service
from agentloop.kernel.settings import ReasonerSettings, TlsSettings
from agentloop.kernel.telemetry import Telemetry
from agentloop.v1 import reasoner_pb2, reasoner_pb2_grpc
from reasoner_svc.assembly import AnswerReader
from reasoner_svc.endpoint_errors import Failure, classify, could_not_connect
from reasoner_svc.routes import Route, Routes

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


class _ModelFailed(Exception):
    """One model of a step's chain gave up: its error, and whether the next model may be tried."""

    def __init__(self, error: AgentloopError, may_fall_back: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.may_fall_back = may_fall_back


class ReasonerService(reasoner_pb2_grpc.ReasonerServicer):
    """Serves Step, StreamStep and ListModels over the named models' shared clients."""

    def __init__(
        self, settings: ReasonerSettings, routes: Routes, telemetry: Telemetry | None = None
    ) -> None:
        self._settings = settings
        self._routes = routes
        self._telemetry = telemetry or Telemetry.noop()

    @contextlib.contextmanager
    def _chat_span(self, route: Route, body: dict[str, Any], streamed: bool) -> Iterator[trace.Span]:
        """The model call's span, named and attributed by the GenAI semantic conventions."""
        model = str(body.get("model", ""))
        endpoint = urlsplit(route.spec.base_url)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": model,
            "agentloop.model.name": route.name,
            "agentloop.model.protocol": route.spec.protocol,
            "agentloop.streamed": streamed,
            "server.address": endpoint.hostname or "",
        }
        if endpoint.port is not None:
            attributes["server.port"] = endpoint.port
        if "temperature" in body:
            attributes["gen_ai.request.temperature"] = float(body["temperature"])
        limit = body.get("max_tokens", body.get("max_output_tokens"))
        if limit is not None:
            attributes["gen_ai.request.max_tokens"] = int(limit)
        with self._telemetry.span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes) as span:
            try:
                yield span
            except _ModelFailed as failed:
                span.set_attribute("error.type", _error_type(failed.__cause__ or failed.error))
                raise
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

    def _too_slow(self, route: Route, timeout: float) -> _ModelFailed:
        """A model that did not finish in its time; another model may, if the caller's deadline allows."""
        setting = "AGENTLOOP_MODEL_TIMEOUT_S"
        if self._routes.table.source:
            setting += f" or model {route.name!r}'s timeout_s in {self._routes.table.source}"
        error = DeadlineExceeded(
            f"model endpoint {route.spec.base_url} did not finish its answer within {timeout:g} s "
            f"({setting}, or the caller's shorter deadline)"
        )
        error.retried = True
        return _ModelFailed(error, may_fall_back=True)

    def _check_size(self, route: Route, reader: AnswerReader) -> None:
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
                f"model endpoint {route.spec.base_url} sent more than {limit} bytes of fields beyond "
                "the standard answer (AGENTLOOP_MAX_PROVIDER_FIELD_BYTES)"
            )

    def _deadline(self, route: Route, context: grpc.aio.ServicerContext) -> tuple[float, float]:
        """(timeout, deadline) of one model's part of a step: its timeout, cut to the caller's deadline."""
        timeout = route.spec.timeout_s
        remaining = context.time_remaining()
        if remaining is not None:
            if remaining < _MIN_USEFUL_DEADLINE_S:
                raise DeadlineExceeded("the caller's deadline leaves no time for a model call")
            timeout = min(timeout, remaining)
        return timeout, asyncio.get_running_loop().time() + timeout

    async def _after_failure(
        self, route: Route, exc: Exception, attempt: int, deadline: float, retry: bool
    ) -> None:
        """Wait before the next request when one may help and fits the budget; else give the model up.

        The error it gives up with is marked retried: the budget is spent (or another request
        cannot help), so the gateway's channel must not send the step again. Another model may
        answer in its place when the failure is the endpoint's (down, failing, rate-limited,
        over its quota, too slow), never when the request itself was refused.
        """
        failure: Failure = classify(exc, route.spec.base_url)
        wait = self._wait_before(route, failure, attempt, deadline) if retry else None
        if wait is None:
            failure.error.retried = True
            falls_back = retry and (failure.retryable or isinstance(failure.error, ResourceExhausted))
            raise _ModelFailed(failure.error, may_fall_back=falls_back) from exc
        log.warning(
            "model %s: request %d of %d failed (%s); trying again in %.2f s",
            route.name,
            attempt + 1,
            route.spec.max_retries + 1,
            failure.error.message,
            wait,
        )
        await asyncio.sleep(wait)

    def _wait_before(self, route: Route, failure: Failure, attempt: int, deadline: float) -> float | None:
        """The wait before another request, or None when there is to be none."""
        if not failure.retryable or attempt >= route.spec.max_retries:
            return None
        wait = failure.wait_s if failure.wait_s is not None else MODEL_BACKOFF.delay_s(attempt)
        left = deadline - asyncio.get_running_loop().time()
        if wait > _MAX_SERVER_WAIT_S or wait + _MIN_USEFUL_DEADLINE_S >= left:
            return None
        return wait

    def _fall_back(
        self,
        failed: _ModelFailed,
        chain: list[Route],
        position: int,
        fallbacks: list[reasoner_pb2.ModelFallback],
        context: grpc.aio.ServicerContext,
    ) -> None:
        """Note a model that failed; raise its error when no other model may answer in its place."""
        remaining = context.time_remaining()
        out_of_time = remaining is not None and remaining < _MIN_USEFUL_DEADLINE_S
        if not failed.may_fall_back or position + 1 >= len(chain) or out_of_time:
            raise failed.error from failed.__cause__
        error, route = failed.error, chain[position]
        fallbacks.append(
            reasoner_pb2.ModelFallback(model=route.name, code=error.code.name, message=error.message)
        )
        log.warning(
            "model %s failed (%s); %s answers in its place",
            route.name,
            error.message,
            chain[position + 1].name,
        )

    async def Step(
        self, request: reasoner_pb2.StepRequest, context: grpc.aio.ServicerContext
    ) -> reasoner_pb2.StepResponse:
        chain = self._routes.chain(request.params.model)
        fallbacks: list[reasoner_pb2.ModelFallback] = []
        for position, route in enumerate(chain):
            try:
                result = await self._step_on(route, request.params, context)
            except _ModelFailed as failed:
                self._fall_back(failed, chain, position, fallbacks, context)
                continue
            _answered(result, route, fallbacks)
            return reasoner_pb2.StepResponse(result=result)
        raise AssertionError("the last model's failure is raised by _fall_back")

    async def _step_on(
        self, route: Route, params: reasoner_pb2.CompletionParams, context: grpc.aio.ServicerContext
    ) -> reasoner_pb2.StepResult:
        """One model's part of a step: up to 1 + its max_retries requests."""
        body = route.protocol.body(params, route.spec.model)
        timeout, deadline = self._deadline(route, context)
        with self._chat_span(route, body, streamed=False) as span:
            for attempt in range(route.spec.max_retries + 1):
                reader = route.protocol.reader(route.spec.base_url)
                try:
                    await route.protocol.complete(body, deadline, reader)
                    break
                except TimeoutError:
                    raise self._too_slow(route, timeout) from None
                except Exception as exc:
                    await self._after_failure(route, exc, attempt, deadline, retry=True)
            span.set_attribute("agentloop.model.requests", attempt + 1)
            self._check_size(route, reader)
            result = reader.result()
            self._record(span, result, body["model"])
        return result

    async def StreamStep(
        self, request: reasoner_pb2.StreamStepRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[reasoner_pb2.StreamStepResponse]:
        chain = self._routes.chain(request.params.model)
        fallbacks: list[reasoner_pb2.ModelFallback] = []
        for position, route in enumerate(chain):
            streamed = False
            try:
                async for event in self._stream_on(route, request.params, context):
                    if event.WhichOneof("event") == "result":
                        _answered(event.result, route, fallbacks)
                    else:
                        streamed = True
                    yield event
                return
            except _ModelFailed as failed:
                if streamed:
                    raise failed.error from failed.__cause__
                self._fall_back(failed, chain, position, fallbacks, context)

    async def _stream_on(
        self, route: Route, params: reasoner_pb2.CompletionParams, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[reasoner_pb2.StreamStepResponse]:
        """One model's part of a streamed step: up to 1 + its max_retries requests, none after a token."""
        body = route.protocol.body(params, route.spec.model)
        timeout, deadline = self._deadline(route, context)
        with self._chat_span(route, body, streamed=True) as span:
            for attempt in range(route.spec.max_retries + 1):
                reader = route.protocol.reader(route.spec.base_url)
                streamed = False
                try:
                    async for reasoning, content in route.protocol.stream(body, deadline, reader):
                        self._check_size(route, reader)
                        if reasoning:
                            streamed = True
                            yield reasoner_pb2.StreamStepResponse(reasoning_token=reasoning)
                        if content:
                            streamed = True
                            yield reasoner_pb2.StreamStepResponse(token=content)
                    break
                except TimeoutError:
                    raise self._too_slow(route, timeout) from None
                except AgentloopError:
                    raise
                except Exception as exc:
                    # Once tokens went out, another request would repeat them: this one is the answer.
                    await self._after_failure(route, exc, attempt, deadline, retry=not streamed)
            span.set_attribute("agentloop.model.requests", attempt + 1)
            result = reader.result()
            self._record(span, result, body["model"])
        yield reasoner_pb2.StreamStepResponse(result=result)

    async def ListModels(
        self, request: reasoner_pb2.ListModelsRequest, context: grpc.aio.ServicerContext
    ) -> reasoner_pb2.ListModelsResponse:
        return self._routes.listing()


def _answered(
    result: reasoner_pb2.StepResult, route: Route, fallbacks: list[reasoner_pb2.ModelFallback]
) -> None:
    """Say on the result which model answered, and which failed before it."""
    result.answered_by = route.name
    result.fallbacks.extend(fallbacks)


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
    here stays the caller's to close (it serves the models at the environment model's endpoint);
    the ones made here close with the server. The models are the environment's and the models
    file's (agentloop.kernel.named_models): a bad file raises SettingError before anything listens.
    """
    table = settings.model_table()
    async with Server().starting() as server:
        routes = Routes(table, client)
        server.resources.push_async_callback(routes.aclose)
        service = ReasonerService(settings, routes, telemetry)
        await server.listen(
            lambda grpc_server: reasoner_pb2_grpc.add_ReasonerServicer_to_server(service, grpc_server),
            [SERVICE_NAME],
            settings.host,
            settings.port,
            telemetry,
            tls=tls,
            authenticator=authenticator,
        )
    for spec in table.models.values():
        log.info(
            "reasoner serves model %s (%s) at %s, %s protocol",
            spec.name,
            spec.model,
            spec.base_url,
            spec.protocol,
        )
    return server


async def serve(settings: ReasonerSettings) -> None:
    """Run a Reasoner until SIGINT/SIGTERM; spans and metrics are flushed on the way out."""
    tls, authenticator = settings.security.tls, service_authenticator(settings.security.service_token)
    await serve_service(
        "reasoner",
        "agentloop-reasoner",
        lambda telemetry: create_server(settings, telemetry=telemetry, tls=tls, authenticator=authenticator),
    )
