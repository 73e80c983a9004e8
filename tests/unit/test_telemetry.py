"""Telemetry from the standard OpenTelemetry variables; instruments and the Prometheus endpoint."""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentloop.kernel.setting_errors import SettingError
from agentloop.kernel.settings import TelemetrySettings
from agentloop.kernel.telemetry import Telemetry


def test_defaults_export_nothing() -> None:
    settings = TelemetrySettings.from_env("agentloop-gateway", {})
    assert settings.service_name == "agentloop-gateway"
    assert settings.traces_exporters == ()
    assert settings.metrics_exporters == ()
    assert settings.otlp_traces_endpoint == ""
    assert settings.metrics_port == 9464


def test_standard_variables_choose_name_exporters_and_endpoints() -> None:
    settings = TelemetrySettings.from_env(
        "agentloop-tools",
        {
            "OTEL_SERVICE_NAME": "tools-eu",
            "OTEL_TRACES_EXPORTER": "otlp, console",
            "OTEL_METRICS_EXPORTER": "Prometheus",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://tempo:4317",
            "AGENTLOOP_METRICS_PORT": "9470",
        },
    )
    assert settings.service_name == "tools-eu"
    assert settings.traces_exporters == ("otlp", "console")
    assert settings.metrics_exporters == ("prometheus",)
    assert settings.otlp_traces_endpoint == "http://tempo:4317"
    assert settings.otlp_metrics_endpoint == "http://collector:4317"
    assert settings.metrics_port == 9470


def test_none_means_no_exporter() -> None:
    settings = TelemetrySettings.from_env("x", {"OTEL_TRACES_EXPORTER": "none"})
    assert settings.traces_exporters == ()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("OTEL_TRACES_EXPORTER", "zipkin"),
        ("OTEL_METRICS_EXPORTER", "statsd"),
        ("OTEL_TRACES_EXPORTER", "prometheus"),
    ],
)
def test_an_unknown_exporter_is_a_setting_error(name: str, value: str) -> None:
    with pytest.raises(SettingError, match=name):
        TelemetrySettings.from_env("x", {name: value})


def test_noop_telemetry_records_nothing_and_costs_nothing() -> None:
    telemetry = Telemetry.noop()
    with telemetry.span("anything") as span:
        assert not span.is_recording()
    with telemetry.node("agent", "r1", 0):
        pass
    telemetry.tokens.add(3, {"kind": "input"})
    telemetry.shutdown()
    telemetry.shutdown()


def points(reader: InMemoryMetricReader) -> dict[str, list[tuple[dict[str, Any], Any]]]:
    found: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found[metric.name] = [
                    (dict(p.attributes or {}), getattr(p, "value", getattr(p, "count", None)))
                    for p in metric.data.data_points
                ]
    return found


def test_node_spans_are_timed_into_the_step_duration_histogram() -> None:
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    telemetry = Telemetry.from_settings(
        TelemetrySettings("agentloop-gateway"),
        span_processors=[SimpleSpanProcessor(exporter)],
        metric_readers=[reader],
    )
    with telemetry.span("invoke_agent agentloop") as run, telemetry.node("agent", "r1", 2):
        pass
    with pytest.raises(RuntimeError), telemetry.node("tools", "r1", 2):
        raise RuntimeError("dependency down")
    spans = {span.name: span for span in exporter.get_finished_spans()}
    node_agent, node_tools, run_span = (
        spans["node agent"],
        spans["node tools"],
        spans["invoke_agent agentloop"],
    )
    assert node_agent.parent is not None
    assert node_agent.parent.span_id == run.get_span_context().span_id
    assert dict(node_agent.attributes or {}) == {
        "agentloop.node": "agent",
        "agentloop.run_id": "r1",
        "agentloop.step": 2,
    }
    assert node_tools.status.status_code.name == "ERROR"
    assert run_span.resource.attributes["service.name"] == "agentloop-gateway"
    durations = points(reader)["agentloop.step.duration"]
    assert sorted(attrs["node"] for attrs, _count in durations) == ["agent", "tools"]
    telemetry.shutdown()


def test_prometheus_serves_the_instruments_on_the_scrape_port() -> None:
    settings = TelemetrySettings("agentloop-reasoner", metrics_exporters=("prometheus",), metrics_port=0)
    telemetry = Telemetry.from_settings(settings)
    try:
        assert telemetry.metrics_port
        telemetry.tokens.add(42, {"kind": "output", "model": "scripted"})
        telemetry.tool_errors.add(1, {"tool": "calculator", "kind": "timeout"})
        url = f"http://127.0.0.1:{telemetry.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read().decode()
    finally:
        telemetry.shutdown()
    assert 'agentloop_tokens_total{kind="output",model="scripted"' in body
    assert "42.0" in body
    assert 'agentloop_tool_errors_total{kind="timeout"' in body


def test_a_taken_scrape_port_does_not_stop_the_service() -> None:
    settings = TelemetrySettings("x", metrics_exporters=("prometheus",), metrics_port=0)
    first = Telemetry.from_settings(settings)
    try:
        assert first.metrics_port is not None
        taken = TelemetrySettings("y", metrics_exporters=("prometheus",), metrics_port=first.metrics_port)
        second = Telemetry.from_settings(taken)
        assert second.metrics_port is None
        second.tokens.add(1, {"kind": "input"})
        second.shutdown()
    finally:
        first.shutdown()


def test_without_an_exporter_spans_carry_ids_but_record_nothing() -> None:
    settings = TelemetrySettings.from_env("agentloop-gateway", {"OTEL_TRACES_EXPORTER": "none"})
    quiet = Telemetry.from_settings(settings)
    exported = Telemetry.from_settings(
        settings, span_processors=[SimpleSpanProcessor(InMemorySpanExporter())]
    )
    try:
        with quiet.span("run") as span:
            assert not span.is_recording()
            assert span.get_span_context().is_valid  # logs and downstream services still get a trace id
        with exported.span("run") as span:
            assert span.is_recording()
    finally:
        quiet.shutdown()
        exported.shutdown()
