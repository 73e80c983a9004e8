"""JSON log lines carry the current trace and the record's extras; secrets never reach a line."""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from agentloop.kernel import logs
from agentloop.kernel.logs import REDACTED, JsonFormatter, RedactingFilter, make_handler, secrets_from_env
from agentloop.kernel.settings import LogSettings

API_KEY = "sk-proj-Abc123def456GHI789jkl"


@pytest.fixture
def logger() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    log = logging.getLogger(f"test.logs.{id(stream)}")
    log.propagate = False
    log.setLevel(logging.DEBUG)
    log.addHandler(make_handler("json", ["configured-secret-value"], stream))
    try:
        yield log, stream
    finally:
        log.handlers.clear()


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_json_line_inside_a_span_has_its_trace_and_span_ids_and_the_extras(
    logger: tuple[logging.Logger, io.StringIO],
) -> None:
    log, stream = logger
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("node agent") as span:
        log.info(
            "run %s: %s -> %s", "r1", "agent", "tools", extra={"run_id": "r1", "node": "agent", "step": 2}
        )
    [entry] = lines(stream)
    context = span.get_span_context()
    assert entry["trace_id"] == format(context.trace_id, "032x")
    assert entry["span_id"] == format(context.span_id, "016x")
    assert entry["message"] == "run r1: agent -> tools"
    assert (entry["level"], entry["logger"]) == ("INFO", log.name)
    assert (entry["run_id"], entry["node"], entry["step"]) == ("r1", "agent", 2)
    assert datetime.fromisoformat(entry["ts"]).tzinfo is not None


def test_outside_a_span_the_ids_are_null_and_every_line_is_one_object(
    logger: tuple[logging.Logger, io.StringIO],
) -> None:
    log, stream = logger
    log.warning("first\nsecond line of the same record")
    log.debug("with an object extra", extra={"payload": {"a": 1}, "when": datetime(2026, 1, 1)})
    first, second = lines(stream)
    assert first["trace_id"] is None
    assert first["span_id"] is None
    assert first["message"] == "first\nsecond line of the same record"
    assert second["payload"] == {"a": 1}
    assert second["when"] == "2026-01-01 00:00:00"


def test_an_exception_is_one_field_of_the_line(logger: tuple[logging.Logger, io.StringIO]) -> None:
    log, stream = logger
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("handler failed")
    [entry] = lines(stream)
    assert entry["level"] == "ERROR"
    assert "RuntimeError: boom" in entry["exception"]
    assert "Traceback" in entry["exception"]


def test_secrets_are_redacted_from_message_args_extras_and_tracebacks(
    logger: tuple[logging.Logger, io.StringIO],
) -> None:
    log, stream = logger
    log.info("calling with Authorization: Bearer eyJhbGciOi.J9-x_y/z== now")
    log.info("key %s and the configured one %s", API_KEY, "configured-secret-value")
    log.info("database at %s", "postgresql+asyncpg://agent:hunter2@db:5432/agentloop")
    log.info("extra", extra={"header": f"bearer {API_KEY}", "run_id": "r1"})
    try:
        raise ValueError(f"rejected key {API_KEY}")
    except ValueError:
        log.exception("model call failed")
    text = stream.getvalue()
    for secret in ("eyJhbGciOi", API_KEY, "Abc123def456", "configured-secret-value", "hunter2"):
        assert secret not in text
    bearer, keys, url, extra, failure = lines(stream)
    assert bearer["message"] == f"calling with Authorization: Bearer {REDACTED} now"
    assert keys["message"] == f"key {REDACTED} and the configured one {REDACTED}"
    assert url["message"] == f"database at postgresql+asyncpg://agent:{REDACTED}@db:5432/agentloop"
    assert extra["header"] == f"bearer {REDACTED}"
    assert extra["run_id"] == "r1"
    assert f"rejected key {REDACTED}" in failure["exception"]


def test_ordinary_text_is_left_alone() -> None:
    redact = RedactingFilter(["configured-secret-value"]).redact
    for text in (
        "the scripted model answered",
        "sk-learn is a library",
        "http://127.0.0.1:8400/v1",
        "postgresql://db/agentloop",
        "bearer of good news",
    ):
        assert redact(text) == text
    assert redact("a task-like-id sk-short") == "a task-like-id sk-short"


def test_the_configured_api_key_is_a_secret_unless_it_is_a_placeholder() -> None:
    assert secrets_from_env({"OPENAI_API_KEY": "my-long-provider-key"}) == ["my-long-provider-key"]
    assert secrets_from_env({"OPENAI_API_KEY": "scripted"}) == []
    assert secrets_from_env({"OPENAI_API_KEY": "ollama"}) == []
    assert secrets_from_env({}) == []


def test_the_filter_also_protects_text_lines() -> None:
    stream = io.StringIO()
    handler = make_handler("text", [], stream)
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "token %s", (API_KEY,), None)
    handler.handle(record)
    assert API_KEY not in stream.getvalue()
    assert f"INFO x token {REDACTED}" in stream.getvalue()


@contextlib.contextmanager
def bare_root() -> Iterator[logging.Logger]:
    """The root logger without handlers (pytest's included), restored afterwards."""
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    root.handlers.clear()
    try:
        yield root
    finally:
        root.handlers[:] = saved
        root.setLevel(level)


def configured(default_level: str, env: dict[str, str]) -> tuple[logging.Handler, int]:
    """The handler and level `logs.configure` installs on a bare root logger."""
    with bare_root() as root:
        logs.configure(default_level, LogSettings.from_env(env))
        [handler] = root.handlers
        return handler, root.level


def test_configure_picks_the_format_and_level_from_the_environment() -> None:
    handler, level = configured("INFO", {"AGENTLOOP_LOG_FORMAT": "json", "AGENTLOOP_LOG_LEVEL": "debug"})
    assert isinstance(handler.formatter, JsonFormatter)
    assert level == logging.DEBUG
    assert any(isinstance(f, RedactingFilter) for f in handler.filters)


def test_configure_defaults_to_text() -> None:
    handler, level = configured("WARNING", {})
    assert not isinstance(handler.formatter, JsonFormatter)
    assert level == logging.WARNING


def test_an_unknown_format_falls_back_to_text(capsys: pytest.CaptureFixture[str]) -> None:
    handler, _ = configured("INFO", {"AGENTLOOP_LOG_FORMAT": "xml"})
    assert not isinstance(handler.formatter, JsonFormatter)
    assert "AGENTLOOP_LOG_FORMAT='xml'" in capsys.readouterr().err


@pytest.mark.parametrize(("level", "expected"), [("INFO", logging.WARNING), ("DEBUG", logging.NOTSET)])
def test_http_clients_log_each_request_only_at_debug(level: str, expected: int) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        root.handlers = []
        logs.configure(settings=LogSettings.from_env({"AGENTLOOP_LOG_LEVEL": level}))
        assert [logging.getLogger(name).level for name in logs.PER_REQUEST_LOGGERS] == [expected] * 2
    finally:
        root.handlers, root.level = saved
        for name in logs.PER_REQUEST_LOGGERS:
            logging.getLogger(name).setLevel(logging.NOTSET)
