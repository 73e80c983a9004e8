"""Bound the messages a stdio MCP server sends: the ToolService runs each stdio server under this.

    python -I mcp_stdio_guard.py MAX_BYTES COMMAND [ARG...]

It starts COMMAND with this process's stdin and stderr, reads the server's
stdout and copies every line (one JSON-RPC message) of at most MAX_BYTES to its
own stdout. A longer line is never held: it is read through and dropped, and
in its place goes a JSON-RPC error for the same request id (found at the start
or the end of the line) with code TOO_LARGE_CODE and the line's size in
``data.bytes``, so the call ends as a "too large" error result instead of the
MCP client buffering a hundred megabytes into one string (quadratically) and
the session being given up for lost. Everything else passes through untouched,
and the guard exits with the server's status when the server closes stdout.

It uses the standard library only and runs isolated (``-I``), so it starts in
milliseconds whatever the server's environment holds.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from typing import IO

TOO_LARGE_CODE = -32042
"""The JSON-RPC error code of a message that was over the limit (implementation-defined range)."""
_EDGE = 512
"""Bytes kept of an oversized line's start and end, to find its id."""
_ID_AT_START = re.compile(rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_ID_AT_END = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$')


def request_id(head: bytes, tail: bytes) -> object | None:
    """The id of the JSON-RPC message whose text starts with ``head`` and ends with ``tail``, if visible."""
    match = _ID_AT_START.match(head) or _ID_AT_END.search(tail)
    if match is None:
        return None
    try:
        ident: object = json.loads(match.group(1))
    except ValueError:
        return None
    return ident


def too_large(ident: object, size: int, limit: int) -> bytes:
    """The error message that replaces an oversized reply."""
    error = {
        "code": TOO_LARGE_CODE,
        "message": f"the server's reply is {size} bytes or more; at most {limit} are accepted",
        "data": {"bytes": size},
    }
    return json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}).encode() + b"\n"


def relay(source: io.BufferedReader, sink: IO[bytes], limit: int) -> None:
    """Copy ``source``'s lines to ``sink`` until it ends, replacing each line over ``limit`` bytes.

    ``source`` is read as data arrives (``read1``), so a reply is passed on as
    soon as its line ends; at most ``limit`` bytes of one line are ever held.
    """
    line = bytearray()
    size = 0  # of the current line so far, kept or not
    head = b""
    tail = b""
    while chunk := source.read1(65536):
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if size + len(piece) > limit and size <= limit:  # this line just went over: stop keeping it
                head = bytes(line[:_EDGE]) + piece[: max(0, _EDGE - len(line))]
                line.clear()
            size += len(piece)
            if size <= limit:
                line += piece
            else:
                tail = (tail + piece)[-_EDGE:]
            if end < 0:
                break
            if size <= limit:
                sink.write(bytes(line) + b"\n")
            else:
                ident = request_id(head, tail)
                if ident is not None:
                    sink.write(too_large(ident, size, limit))
                else:
                    print(f"mcp guard: dropped a {size}-byte message without a visible id", file=sys.stderr)
            sink.flush()
            line.clear()
            size = 0
            head = tail = b""
            start = end + 1
    if line and size <= limit:
        sink.write(bytes(line))
        sink.flush()


def main(argv: list[str]) -> int:
    """Run the server named by ``argv`` (MAX_BYTES COMMAND [ARG...]) behind the guard."""
    limit, command = int(argv[0]), argv[1:]
    server = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert isinstance(server.stdout, io.BufferedReader)
    try:
        relay(server.stdout, sys.stdout.buffer, limit)
    except BrokenPipeError:
        pass  # the client is gone; the server gets EOF on its stdin and ends
    finally:
        server.stdout.close()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
