"""The stdio guard: lines up to the limit pass through as they are, longer ones become a "too large" error."""

from __future__ import annotations

import io
import json

import pytest

from tool_svc.mcp_stdio_guard import TOO_LARGE_CODE, relay


def guarded(data: bytes, limit: int, chunk: int = 7) -> list[bytes]:
    class Trickle(io.BufferedReader):
        def read1(self, size: int = -1) -> bytes:
            return super().read1(min(size, chunk))

    sink = io.BytesIO()
    relay(Trickle(io.BytesIO(data)), sink, limit)
    return sink.getvalue().splitlines(keepends=True)


def test_lines_within_the_limit_pass_through_unchanged() -> None:
    lines = [b'{"jsonrpc":"2.0","id":1,"result":{}}\n', b"\n", b'{"jsonrpc":"2.0","method":"x"}\n']
    for chunk in (1, 5, 64, 65536):
        assert guarded(b"".join(lines), limit=40, chunk=chunk) == lines


@pytest.mark.parametrize(
    ("line", "ident"),
    [
        (b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"' + b"x" * 5000 + b'"}]}}', 7),
        (b'{"result":{"text":"' + b"y" * 5000 + b'"},"jsonrpc":"2.0","id":"call-\\"9"}', 'call-"9'),
    ],
)
def test_a_longer_line_becomes_an_error_for_its_request(line: bytes, ident: object) -> None:
    after = b'{"jsonrpc":"2.0","id":8,"result":{}}\n'
    out = guarded(line + b"\n" + after, limit=1000)
    assert len(out) == 2
    error = json.loads(out[0])
    assert error["id"] == ident
    assert error["error"]["code"] == TOO_LARGE_CODE
    assert error["error"]["data"] == {"bytes": len(line)}
    assert out[1] == after  # the next message is untouched


def test_a_longer_line_without_a_visible_id_is_dropped() -> None:
    assert guarded(b'{"x":"' + b"z" * 5000 + b'"}\n{"id":1}\n', limit=100) == [b'{"id":1}\n']
