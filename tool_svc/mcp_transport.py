"""How the ToolService reaches an MCP server, with every message it accepts bounded in size.

The SDK's transports hold a whole message before parsing it, with no limit on
stdio (where joining a line of a hundred megabytes out of 64 KiB reads takes
minutes) and none on a plain JSON reply over HTTP. So:

- a stdio server runs under tool_svc/mcp_stdio_guard.py, which passes lines of
  up to the limit on and turns a longer one into a JSON-RPC error for the same
  request (code TOO_LARGE_CODE) without ever holding it;
- over streamable HTTP, an event stream's events are bounded by the SDK's own
  ``max_sse_event_size``, and a JSON reply's body by a transport that stops
  reading it past the limit.

`too_large` recognises each of these in the error a call gets, so the call ends
as a TOO_LARGE result like an oversized result of any other tool, and the
session (which is fine) is kept.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from agentloop.kernel.settings import environment
from tool_svc.mcp_config import McpServerConfig
from tool_svc.mcp_stdio_guard import TOO_LARGE_CODE

GUARD = Path(__file__).with_name("mcp_stdio_guard.py")
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=None)
"""No read limit of its own: a call is bounded by the executor's timeout, a listing by connect_timeout_s."""
_BODY_TOO_LARGE = "agentloop: the reply body is over"
_SSE_TOO_LARGE = re.compile(r"Server-sent event exceeded the (\d+) byte limit")


def message_limit(max_result_bytes: int) -> int:
    """The largest message accepted from a server whose results may hold ``max_result_bytes``.

    A result's text arrives JSON-escaped, and SDK servers send it twice (as
    text content and as structured content), so a message may be a few times
    the result it carries; a result that fits here but is still too large is
    refused by the executor, as any tool's is.
    """
    return 4 * max_result_bytes + 64 * 1024


def stdio_parameters(config: McpServerConfig, limit: int) -> StdioServerParameters:
    """The guarded command line of a stdio server (see the module docstring).

    The command is looked up here, so that a missing or non-executable one
    fails as FileNotFoundError or PermissionError naming it, as it would if it
    were started directly.
    """
    assert config.command is not None
    command = _resolve(config.command, config.cwd, (config.env or {}).get("PATH", environment().get("PATH")))
    return StdioServerParameters(
        command=sys.executable,
        args=["-I", str(GUARD), str(limit), command, *config.args],
        env=config.env or None,
        cwd=config.cwd,
    )


def _resolve(command: str, cwd: str | None, path: str | None) -> str:
    if os.sep not in command:
        for directory in (path or os.defpath).split(os.pathsep):
            candidate = Path(directory or ".") / command
            if candidate.is_file():
                if os.access(candidate, os.X_OK):
                    return str(candidate)
                raise PermissionError(13, "Permission denied", str(candidate))
        raise FileNotFoundError(2, "No such file or directory", command)
    candidate = Path(command) if os.path.isabs(command) else Path(cwd or ".") / command
    if not candidate.is_file():
        raise FileNotFoundError(2, "No such file or directory", command)
    if not os.access(candidate, os.X_OK):
        raise PermissionError(13, "Permission denied", command)
    return os.path.abspath(candidate)  # not resolve(): a venv's python is a symlink that must stay one


def http_client(config: McpServerConfig, limit: int) -> httpx2.AsyncClient:
    """The HTTP client of a streamable-HTTP server, its JSON reply bodies bounded by ``limit``.

    Event streams are bounded by `http_session`.
    """
    transport = _BoundedTransport(httpx2.AsyncHTTPTransport(), limit)
    return httpx2.AsyncClient(headers=config.headers, timeout=_HTTP_TIMEOUT, transport=transport)


def http_session(url: str, http: httpx2.AsyncClient, limit: int) -> Client:
    """A session over streamable HTTP whose event-stream events are bounded by ``limit``.

    No response cache: every listing is a live probe.
    """
    return Client(streamable_http_client(url, http_client=http, max_sse_event_size=limit), cache=None)


def too_large(exc: MCPError, limit: int) -> int | None:
    """The size (or a lower bound) of the reply a call's error says was over the limit; None otherwise."""
    if exc.code == TOO_LARGE_CODE and isinstance(exc.data, dict) and isinstance(exc.data.get("bytes"), int):
        return int(exc.data["bytes"])
    if _BODY_TOO_LARGE in exc.message:
        return limit + 1
    if (match := _SSE_TOO_LARGE.search(exc.message)) is not None:
        return int(match.group(1)) + 1
    return None


class _ReplyTooLarge(httpx2.StreamError):
    """A reply body went over the limit (a StreamError, so the SDK answers the request with an error)."""


class _BoundedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            if size > self._limit:
                raise _ReplyTooLarge(f"{_BODY_TOO_LARGE} {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedTransport(httpx2.AsyncBaseTransport):
    """Bounds the body of every JSON reply; event streams are bounded per event by the SDK."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = _BoundedBody(response.stream, self._limit)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
