"""A real server's answer, replayed byte for byte by the scripted model.

Real OpenAI-compatible servers each bend the wire format their own way (see docs/models.md);
a script turn that replays one of their recorded answers puts the client under test in front of
exactly what that server sent: its status, its headers and its body, a stream cut into the
same events.

A recording is kept as a transcript, the HTTP answer as text::

    HTTP 200
    content-type: text/event-stream

    data: {"id":"chatcmpl-1","object":"chat.completion.chunk",...}

    data: [DONE]

The first line is ``HTTP`` and the status; header lines follow until a blank line; everything
after the blank line is the body, verbatim. A body with SSE events is written one event at a
time, so the client receives them as separate reads, as from the real server.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_STATUS_LINE = re.compile(r"HTTP(?:/[\d.]+)?\s+(\d{3})(?:\s.*)?")
_EVENT_END = re.compile(r"\r?\n\r?\n")


@dataclass(frozen=True, slots=True)
class Recording:
    """One HTTP answer: status, headers (in order) and body text."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: str = ""

    _FIELDS = frozenset({"status", "headers", "body"})

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:
            raise ValueError(f"status: expected an HTTP status (100-599), got {self.status}")
        object.__setattr__(self, "headers", tuple((str(k), str(v)) for k, v in self.headers))

    @property
    def content_type(self) -> str:
        for name, value in self.headers:
            if name.lower() == "content-type":
                return value
        return "text/event-stream" if self.is_stream else "application/json"

    @property
    def is_stream(self) -> bool:
        """Whether the body is server-sent events (by its content type, else by its first line)."""
        for name, value in self.headers:
            if name.lower() == "content-type":
                return value.split(";")[0].strip().lower() == "text/event-stream"
        first = self.body.lstrip("\r\n").split("\n", 1)[0]
        return first.startswith(("data:", "event:", ":", "id:", "retry:"))

    def events(self) -> list[bytes]:
        """The body cut after each blank line (an SSE event's end), joining back to the body exactly."""
        pieces: list[bytes] = []
        start = 0
        for match in _EVENT_END.finditer(self.body):
            pieces.append(self.body[start : match.end()].encode())
            start = match.end()
        if start < len(self.body):
            pieces.append(self.body[start:].encode())
        return pieces

    @classmethod
    def parse(cls, transcript: str, where: str = "replay") -> Recording:
        """A recording from its transcript text (see the module docstring)."""
        head, sep, body = transcript.partition("\n\n")
        if not sep:
            raise ValueError(f"{where}: a transcript needs a blank line between its head and its body")
        lines = head.replace("\r\n", "\n").split("\n")
        status = _STATUS_LINE.fullmatch(lines[0].strip())
        if status is None:
            raise ValueError(f"{where}: the first line must be 'HTTP <status>', got {lines[0]!r}")
        headers = []
        for number, line in enumerate(lines[1:], start=2):
            name, colon, value = line.partition(":")
            if not colon or not name.strip():
                raise ValueError(f"{where}: line {number} is not a 'name: value' header: {line!r}")
            headers.append((name.strip(), value.strip()))
        return cls(status=int(status.group(1)), headers=tuple(headers), body=body)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Recording:
        with open(path, encoding="utf-8", newline="") as handle:
            return cls.parse(handle.read(), os.fspath(path))

    def transcript(self) -> str:
        head = [f"HTTP {self.status}", *(f"{name}: {value}" for name, value in self.headers)]
        return "\n".join(head) + "\n\n" + self.body

    @classmethod
    def from_dict(cls, data: object, where: str = "replay") -> Recording:
        """A transcript string, or an object with ``status``, ``headers`` (an object) and ``body``."""
        if isinstance(data, str):
            return cls.parse(data, where)
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected a transcript string or an object, got {type(data).__name__}")
        unknown = sorted(str(key) for key in data if key not in cls._FIELDS)
        if unknown:
            raise ValueError(f"{where}.{unknown[0]}: unknown field (allowed: body, headers, status)")
        status = data.get("status", 200)
        headers = data.get("headers", {})
        body = data.get("body", "")
        if isinstance(status, bool) or not isinstance(status, int):
            raise ValueError(f"{where}.status: expected an integer, got {status!r}")
        if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
            raise ValueError(f"{where}.headers: expected an object of strings")
        if not isinstance(body, str):
            raise ValueError(f"{where}.body: expected a string, got {type(body).__name__}")
        try:
            return cls(status=status, headers=tuple(headers.items()), body=body)
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "headers": dict(self.headers), "body": self.body}
