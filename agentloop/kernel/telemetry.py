"""Traces and metrics of one agentloop process, behind one `Telemetry` object passed explicitly.

Each service's `serve()` builds its Telemetry from the standard OpenTelemetry
variables (`Telemetry.from_env`), hands it to the server and the code that
makes spans, and shuts it down (flushing what is buffered) when it stops.
Nothing is installed globally: the providers live in the object, and only the
W3C context propagator is OpenTelemetry's own (OTEL_PROPAGATORS, default
``tracecontext,baggage``). `Telemetry.noop()` is what code gets when nobody
passed one (unit tests, embedded use): spans and metrics then cost next to
nothing and go nowhere.

One run is one trace across the three processes: the gateway's channels carry
the current context in gRPC metadata (`TraceContextClientInterceptor`) and
every server continues it in a SERVER span per RPC (`ServerTracingInterceptor`,
added by `agentloop.kernel.serving.Server.listen`). See docs/observability.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from importlib import metadata as package_metadata
from typing import Any

import grpc
from opentelemetry import metrics, propagate, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from agentloop.kernel.handlers import AroundInterceptor, call_editors, with_metadata
from agentloop.kernel.settings import TelemetrySettings

log = logging.getLogger(__name__)

SCOPE = "agentloop"

# Status codes that make a SERVER span an error (OpenTelemetry's gRPC conventions);
# the others (INVALID_ARGUMENT, NOT_FOUND, ...) are the caller's business.
_SERVER_ERRORS = frozenset(
    {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)


def _version() -> str:
    try:
        return package_metadata.version("agentloop")
    except package_metadata.PackageNotFoundError:
        return "0"


class Telemetry:
    """The tracer, the meter and the instruments of one process."""

    def __init__(
        self,
        service_name: str = SCOPE,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        on_shutdown: Sequence[Callable[[], None]] = (),
    ) -> None:
        self.service_name = service_name
        self.tracer_provider = tracer_provider or trace.NoOpTracerProvider()
        self.meter_provider = meter_provider or metrics.NoOpMeterProvider()
        self.tracer = self.tracer_provider.get_tracer(SCOPE, _version())
        self.metrics_port: int | None = None
        """Port of the Prometheus scrape endpoint, when there is one."""
        meter = self.meter_provider.get_meter(SCOPE, _version())
        self.runs = meter.create_counter(
            "agentloop.runs", unit="{run}", description="Runs that ended in this gateway, by final status"
        )
        self.runs_active = meter.create_up_down_counter(
            "agentloop.runs.active", unit="{run}", description="Runs executing in this gateway"
        )
        self.step_duration = meter.create_histogram(
            "agentloop.step.duration", unit="ms", description="Duration of one node of the loop, by node"
        )
        self.tokens = meter.create_counter(
            "agentloop.tokens", unit="{token}", description="Model tokens, by kind (input/output) and model"
        )
        self.tool_errors = meter.create_counter(
            "agentloop.tool.errors", unit="{error}", description="Tool calls that ended in an error result"
        )
        self._on_shutdown = list(on_shutdown)
        self._closed = False

    # --- construction -------------------------------------------------------------
    @classmethod
    def noop(cls) -> Telemetry:
        """Spans and metrics that go nowhere: the default wherever none was passed."""
        return cls()

    @classmethod
    def from_env(cls, default_service_name: str) -> Telemetry:
        """From OTEL_SERVICE_NAME, OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER, OTEL_EXPORTER_OTLP_*."""
        return cls.from_settings(TelemetrySettings.from_env(default_service_name))

    @classmethod
    def from_settings(
        cls,
        settings: TelemetrySettings,
        *,
        span_processors: Sequence[SpanProcessor] = (),
        metric_readers: Sequence[MetricReader] = (),
    ) -> Telemetry:
        """Real providers with the configured exporters (plus any processors/readers given, for tests).

        The tracer provider is a real one even without an exporter, so trace ids
        reach the logs and the services downstream. But with nothing to receive
        its spans (no exporter, no processor) it samples nothing: its spans are
        non-recording, carrying ids and context at a fraction of the cost of
        recording names, attributes and events nobody reads (recording was
        8-16 % of each service's CPU per step). Such a service's trace context
        goes downstream unsampled, so a service that exports spans only
        records what its callers sample: export from every service or from none.
        """
        resource = Resource.create({"service.name": settings.service_name, "service.version": _version()})
        exporters = _span_exporters(settings)
        sampler = None if exporters or span_processors else ALWAYS_OFF
        tracer_provider = TracerProvider(resource=resource, sampler=sampler, shutdown_on_exit=False)
        for exporter in exporters:
            tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        for processor in span_processors:
            tracer_provider.add_span_processor(processor)
        readers = [*_metric_readers(settings), *metric_readers]
        on_shutdown: list[Callable[[], None]] = []
        scrape_port: int | None = None
        if "prometheus" in settings.metrics_exporters:
            reader, scrape_port, stop = _prometheus(settings)
            if reader is not None:
                readers.append(reader)
                on_shutdown.append(stop)
        meter_provider = (
            MeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
            if readers
            else None
        )
        telemetry = cls(settings.service_name, tracer_provider, meter_provider, on_shutdown)
        telemetry.metrics_port = scrape_port
        return telemetry

    # --- spans ------------------------------------------------------------------
    def span(
        self,
        name: str,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Mapping[str, AttributeValue] | None = None,
        context: Any = None,
        record_exception: bool = True,
    ) -> contextlib.AbstractContextManager[trace.Span]:
        """A span that is the current one inside the ``with`` block (an exception marks it ERROR)."""
        return self.tracer.start_as_current_span(
            name,
            context=context,
            kind=kind,
            attributes=attributes,
            record_exception=record_exception,
            set_status_on_exception=record_exception,
        )

    @contextlib.contextmanager
    def node(self, node: str, run_id: str, step: int) -> Iterator[trace.Span]:
        """The span of one node of the loop ("node agent"), timed into agentloop.step.duration."""
        started = time.perf_counter()
        attributes: dict[str, AttributeValue] = {
            "agentloop.node": node,
            "agentloop.run_id": run_id,
            "agentloop.step": step,
        }
        try:
            with self.span(f"node {node}", attributes=attributes) as span:
                yield span
        finally:
            self.step_duration.record((time.perf_counter() - started) * 1000.0, {"node": node})

    # --- lifecycle --------------------------------------------------------------
    def force_flush(self, timeout_ms: int = 10_000) -> None:
        """Export what is buffered now."""
        for provider in (self.tracer_provider, self.meter_provider):
            flush = getattr(provider, "force_flush", None)
            if flush is not None:
                flush(timeout_ms)

    def shutdown(self) -> None:
        """Flush and close exporters and the scrape endpoint; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        for provider in (self.tracer_provider, self.meter_provider):
            stop = getattr(provider, "shutdown", None)
            if stop is None:
                continue
            try:
                stop()
            except Exception:
                log.warning("telemetry shutdown failed", exc_info=True)
        for close in self._on_shutdown:
            try:
                close()
            except Exception:
                log.warning("telemetry shutdown failed", exc_info=True)

    async def aclose(self) -> None:
        """`shutdown` off the event loop (exporting may block on the network)."""
        await asyncio.to_thread(self.shutdown)


def _span_exporters(settings: TelemetrySettings) -> list[SpanExporter]:
    exporters: list[SpanExporter] = []
    for name in settings.traces_exporters:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            exporters.append(OTLPSpanExporter(endpoint=settings.otlp_traces_endpoint or None))
        elif name == "console":
            # stderr: stdout carries the "listening on port N" line that launchers read.
            exporters.append(ConsoleSpanExporter(out=sys.stderr))
    return exporters


def _metric_readers(settings: TelemetrySettings) -> list[MetricReader]:
    readers: list[MetricReader] = []
    for name in settings.metrics_exporters:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

            exporter = OTLPMetricExporter(endpoint=settings.otlp_metrics_endpoint or None)
            readers.append(PeriodicExportingMetricReader(exporter))
        elif name == "console":
            readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stderr)))
    return readers


def _prometheus(settings: TelemetrySettings) -> tuple[MetricReader | None, int | None, Callable[[], None]]:
    """A reader on a registry of our own, served at http://host:AGENTLOOP_METRICS_PORT/metrics."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry(auto_describe=True)
    try:
        server, thread = start_http_server(settings.metrics_port, settings.metrics_host, registry=registry)
    except OSError as exc:
        # Metrics are not worth refusing to serve for: say so and go on without them.
        log.warning(
            "metrics endpoint %s:%d unavailable (%s); serving without it",
            settings.metrics_host,
            settings.metrics_port,
            exc,
        )
        return None, None, lambda: None
    port = int(server.server_port)
    log.info("metrics at http://%s:%d/metrics", settings.metrics_host, port)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return PrometheusMetricReader(registry=registry), port, stop


# --- gRPC: context in metadata, a SERVER span per RPC ---------------------------------


def _with_trace_context(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return with_metadata(details, carrier.items()) if carrier else details


def trace_context_interceptors() -> list[Any]:
    """Client interceptors that put the current trace context (W3C traceparent) into each call's metadata.

    For a channel's ``interceptors``: unary-unary and unary-stream calls (a
    channel files each interceptor under one kind only, hence two). The
    interceptor runs in a task created when the call is made, which starts with
    a copy of the caller's context: the span current at the call site becomes
    the parent of the callee's SERVER span.
    """
    return call_editors(_with_trace_context)


PROBE_METADATA_KEY = "agentloop-probe"
"""Metadata a health probe's calls carry (gateway.api.health): they are not traced, like health checks."""


class ServerTracingInterceptor(AroundInterceptor):
    """A SERVER span per RPC ("agentloop.v1.Reasoner/Step"), continuing the caller's trace.

    Health checks and reflection are not traced, nor the calls of the gateway's
    health probes (marked with PROBE_METADATA_KEY): a probe every few seconds
    would otherwise bury the traces of runs. Put it first among the
    interceptors so it sees the status the error interceptor sets.
    """

    def __init__(self, telemetry: Telemetry) -> None:
        self._telemetry = telemetry

    def applies(self, method: str) -> bool:
        return not method.startswith("/grpc.")

    @contextlib.asynccontextmanager
    async def around(
        self, details: grpc.HandlerCallDetails, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[None]:
        """The call's span; its status is the call's, set by the time the behaviour returns or raises."""
        metadata = details.invocation_metadata or ()
        if any(key == PROBE_METADATA_KEY for key, _ in metadata):
            yield
            return
        name = (details.method or "").lstrip("/")
        service, _, rpc = name.partition("/")
        attributes: dict[str, AttributeValue] = {
            "rpc.system": "grpc",
            "rpc.service": service,
            "rpc.method": rpc,
        }
        carrier = {key: value for key, value in metadata if isinstance(value, str)}
        with self._telemetry.span(
            name,
            kind=SpanKind.SERVER,
            attributes=attributes,
            context=propagate.extract(carrier),
            record_exception=False,
        ) as span:
            try:
                yield
            except BaseException as exc:
                _record_status(span, context, exc)
                raise
            _record_status(span, context, None)


def _record_status(span: trace.Span, context: grpc.aio.ServicerContext, exc: BaseException | None) -> None:
    """rpc.grpc.status_code, and ERROR for the codes that are the server's fault."""
    code: grpc.StatusCode | None
    if isinstance(exc, asyncio.CancelledError):
        code = grpc.StatusCode.CANCELLED
    elif exc is None or isinstance(exc, grpc.aio.AbortError):
        code = context.code() or grpc.StatusCode.OK
    else:
        code = grpc.StatusCode.UNKNOWN
        span.record_exception(exc)
    if isinstance(code, int):  # some grpc versions report the raw integer
        code = next((c for c in grpc.StatusCode if c.value[0] == code), grpc.StatusCode.UNKNOWN)
    span.set_attribute("rpc.grpc.status_code", code.value[0])
    if code in _SERVER_ERRORS:
        details = context.details() if exc is None or isinstance(exc, grpc.aio.AbortError) else str(exc)
        if isinstance(details, bytes):
            details = details.decode("utf-8", "replace")
        span.set_status(Status(StatusCode.ERROR, f"{code.name}: {details or ''}".strip()))
        span.set_attribute("error.type", code.name)
