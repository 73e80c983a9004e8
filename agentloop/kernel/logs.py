"""Logging setup shared by every agentloop process.

AGENTLOOP_LOG_FORMAT=text (default) writes one readable line per record;
``json`` writes one JSON object per line: ``ts``, ``level``, ``logger``,
``message``, ``trace_id`` and ``span_id`` of the span current when the record
was made (null outside a span), every ``extra`` field (``run_id``, ``node``,
``next_node``, ``step``...) and ``exception`` when there is one. Either way a
filter on the handler redacts secrets from every record before it is written:
bearer tokens, ``sk-...`` keys, passwords in URLs and the configured
OPENAI_API_KEY.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace

from agentloop.kernel.settings import LogSettings

REDACTED = "[REDACTED]"
LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

# Shorter configured keys are placeholders ("ollama") and would mangle ordinary words.
_MIN_SECRET_CHARS = 8
_PLACEHOLDER_KEYS = frozenset({"scripted"})
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*"), rf"\1 {REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), REDACTED),
    (re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+@"), rf"\1{REDACTED}@"),
)
# Attributes every LogRecord has; anything else on a record came from `extra`.
_STANDARD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "trace_id",
    "span_id",
}


class RedactingFilter(logging.Filter):
    """Removes secrets from the message, the arguments, the traceback and string extras of a record.

    Attach it to a handler: handler filters see every record that handler
    writes, whichever logger made it.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        literal = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._secrets = re.compile("|".join(re.escape(s) for s in literal)) if literal else None

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by [REDACTED]."""
        if self._secrets is not None:
            text = self._secrets.sub(REDACTED, text)
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: keep what can be shown
            message = f"{record.msg} {record.args}"
        record.msg = self.redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        for key, value in list(vars(record).items()):
            if key not in _STANDARD_ATTRIBUTES and isinstance(value, str):
                setattr(record, key, self.redact(value))
        return True


class TraceContextFilter(logging.Filter):
    """Stamps ``trace_id`` and ``span_id`` (hex, or None outside a span) on each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            record.trace_id = format(context.trace_id, "032x")
            record.span_id = format(context.span_id, "016x")
        else:
            record.trace_id = None
            record.span_id = None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        if not hasattr(record, "trace_id"):
            TraceContextFilter().filter(record)
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "trace_id": getattr(record, "trace_id", None),
            "span_id": getattr(record, "span_id", None),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRIBUTES and key not in entry:
                entry[key] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        return json.dumps(entry, ensure_ascii=False, default=str)


def secrets_from_env(env: Mapping[str, str]) -> list[str]:
    """The configured values that must never reach a log line."""
    key = env.get("OPENAI_API_KEY", "")
    if len(key) >= _MIN_SECRET_CHARS and key not in _PLACEHOLDER_KEYS:
        return [key]
    return []


def make_handler(
    log_format: str = "text", secrets: Iterable[str] = (), stream: Any = None
) -> logging.StreamHandler[Any]:
    """A handler writing `log_format` lines with trace ids and secrets redacted."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"AGENTLOOP_LOG_FORMAT={log_format!r}: use one of {', '.join(LOG_FORMATS)}")
    handler: logging.StreamHandler[Any] = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(TraceContextFilter())
    handler.addFilter(RedactingFilter(secrets))
    return handler


def configure(default_level: str = "INFO", settings: LogSettings | None = None) -> None:
    """Log to stderr at AGENTLOOP_LOG_LEVEL (else `default_level`) in AGENTLOOP_LOG_FORMAT (text, json)."""
    settings = LogSettings.from_env() if settings is None else settings
    level = (settings.level or default_level).upper()
    log_format = settings.format
    if log_format not in LOG_FORMATS:
        print(f"AGENTLOOP_LOG_FORMAT={log_format!r} is not text or json; using text", file=sys.stderr)
        log_format = "text"
    logging.basicConfig(
        level=level,
        handlers=[make_handler(log_format, secrets_from_env({"OPENAI_API_KEY": settings.api_key}))],
    )
    quiet = logging.NOTSET if level == "DEBUG" else logging.WARNING
    for name in PER_REQUEST_LOGGERS:
        logging.getLogger(name).setLevel(quiet)


PER_REQUEST_LOGGERS = ("httpx", "httpx2")
"""HTTP clients that log every request at INFO ("HTTP Request: POST …"): one record per model
call, formatted and redacted, is noise at INFO and a measurable share of the reasoner's CPU per
step; they speak at AGENTLOOP_LOG_LEVEL=DEBUG only (their warnings always)."""
