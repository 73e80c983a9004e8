"""Tools of MCP servers, served by the ToolService like its Python tools.

Each configured server gets one task that owns its MCP session: it opens the
SDK's ``Client`` (entering and leaving every anyio cancel scope in that one
task), lists the tools, registers them as ``<server>__<tool>`` and then watches
the connection with pings. A call made by the executor goes straight through
the session from the caller's task, so MCP calls get the executor's timeouts,
parallelism, error results and spans like any other tool. A call that finds the
connection gone wakes the owner, which reconnects with backoff and re-lists
the tools; meanwhile calls of that server's tools fail with an error result
that tells the model the server is reconnecting. A server that cannot start is
reported once and retried in the background; the other tools keep serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import re
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp import Client, MCPError
from pydantic import ValidationError

from agentloop.kernel.untrusted_schema import SchemaRefused, check_schema
from tool_svc.executor import DEFAULT_MAX_RESULT_BYTES
from tool_svc.mcp_config import McpServerConfig
from tool_svc.mcp_transport import http_client, http_session, message_limit, stdio_parameters, too_large
from tool_svc.registry import ResultTooLarge, Tool, ToolRegistry

log = logging.getLogger(__name__)

SEPARATOR = "__"
MAX_TOOLS_PER_SERVER = 256
MAX_SCHEMA_BYTES = 64 * 1024
MAX_DESCRIPTION_CHARS = 4000
_LIST_PAGES = 32
_BACKOFF_START_S = 0.5
_BACKOFF_MAX_S = 30.0
_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


class McpToolError(Exception):
    """The MCP server answered a call with an error (``isError`` or a protocol error)."""


class McpServerUnavailable(Exception):
    """The call could not reach its MCP server: not connected yet, or the connection dropped."""


def namespaced(server: str, tool: str, taken: set[str]) -> str:
    """``<server>__<tool>``, made to fit the tool-name rule ^[a-zA-Z0-9_-]{1,64}$ of model APIs.

    Characters outside that alphabet become "_"; a name that is then too long,
    or already ``taken`` by another tool of the same server, is cut and ends in
    a short hash of the original name so it stays unique and stable.
    """
    name = f"{server}{SEPARATOR}{_INVALID_NAME_CHARS.sub('_', tool)}"
    if len(name) <= 64 and name not in taken:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[: 64 - 9]}_{digest}"


def result_text(result: mcp_types.CallToolResult) -> str:
    """What the model reads of a tool result: its text blocks, and a line naming each other block."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type} {block.mime_type}, {len(block.data)} base64 characters]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource {block.uri}]")
        elif isinstance(block.resource, mcp_types.TextResourceContents):
            parts.append(block.resource.text)
        else:
            parts.append(f"[resource {block.resource.uri}, {len(block.resource.blob)} base64 characters]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts)


def describe_failure(exc: BaseException, config: McpServerConfig) -> str:
    """One line saying why a server could not be reached, without a traceback."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and config.command is not None:
        return f"command {config.command!r} was not found (check 'command' and PATH)"
    if isinstance(exc, PermissionError) and config.command is not None:
        return f"command {config.command!r} cannot be executed ({exc.strerror})"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect to {config.url} ({exc})"
    if isinstance(exc, MCPError):
        return f"the server answered with an error: {exc.message} (code {exc.code})"
    text = str(exc) or "no details"
    return f"{type(exc).__name__}: {text}"


def _fingerprint(tools: list[mcp_types.Tool]) -> str:
    """What the registry entries of a tool list depend on, to notice a changed list."""
    return json.dumps(
        [[tool.name, tool.title, tool.description, tool.input_schema] for tool in tools],
        sort_keys=True,
        default=str,
    )


class McpConnection:
    """One MCP server: the task owning its session, and the registry entries of its tools."""

    def __init__(
        self, name: str, config: McpServerConfig, registry: ToolRegistry, max_result_bytes: int
    ) -> None:
        self.name = name
        self.config = config
        self._registry = registry
        self._limit = message_limit(max_result_bytes)
        self._client: Client | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._ever_connected = False
        self._failures = 0
        self._listed = ""
        self._calls_in_flight = 0
        self._calls_started = 0
        self.first_attempt = asyncio.Event()
        """Set once the first connection attempt has succeeded or failed."""
        self.connected = asyncio.Event()
        """Set while a session is open (tests wait on it after a restart)."""

    @property
    def source(self) -> str:
        """The registry source its tools are registered under."""
        return f"mcp:{self.name}"

    async def run(self) -> None:
        """Connect, serve, and reconnect with backoff until ``stop()``."""
        while not self._stopping:
            try:
                await self._session()
            except Exception as exc:
                self._report(exc)
            finally:
                self._client = None
                self.connected.clear()
                self.first_attempt.set()
            if self._stopping:
                break
            # Failures since the last successful connection: 0.5 s, 1 s, 2 s, ... up to 30 s.
            delay = min(_BACKOFF_START_S * 2 ** min(max(self._failures - 1, 0), 16), _BACKOFF_MAX_S)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    def stop(self) -> None:
        """Ask the owner task to close the session and end."""
        self._stopping = True
        self._wake.set()

    async def _session(self) -> None:
        """One session, from connecting to the moment it drops or the service stops."""
        # The deadline bounds connecting and listing only; it is lifted once the tools are listed. The
        # scope encloses the exit stack, so every scope the SDK opens is closed inside it, in this task.
        with anyio.CancelScope(deadline=anyio.current_time() + self.config.connect_timeout_s) as scope:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(await self._open(stack))
                listed = await self._list_tools(client)
                scope.deadline = math.inf
                self._publish(listed)
                self._client = client
                self.connected.set()
                self.first_attempt.set()
                self._failures = 0
                verb = "reconnected" if self._ever_connected else "connected"
                self._ever_connected = True
                log.info(
                    "MCP server %r %s (%s): %d tools", self.name, verb, self.config.transport, len(listed)
                )
                await self._watch(client)
        if scope.cancelled_caught:
            raise TimeoutError(f"no answer within {self.config.connect_timeout_s:g} s")

    async def _open(self, stack: contextlib.AsyncExitStack) -> Client:
        """A session whose incoming messages are bounded in size (tool_svc.mcp_transport)."""
        config = self.config
        if config.command is not None:
            # No response cache: every listing is a live probe.
            return Client(stdio_parameters(config, self._limit), cache=None)
        assert config.url is not None
        http = await stack.enter_async_context(http_client(config, self._limit))
        return http_session(config.url, http, self._limit)

    async def _list_tools(self, client: Client) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None or len(tools) >= MAX_TOOLS_PER_SERVER:
                break
        if len(tools) > MAX_TOOLS_PER_SERVER:
            log.warning(
                "MCP server %r lists %d tools; serving the first %d",
                self.name,
                len(tools),
                MAX_TOOLS_PER_SERVER,
            )
        return tools[:MAX_TOOLS_PER_SERVER]

    async def _watch(self, client: Client) -> None:
        """Return when the service stops or the connection is found dropped.

        An idle connection is probed by listing the tools again (the protocol
        has no ping from 2026-07-28 on), which also picks up a changed list.
        A session busy with a call is not probed, and a probe that gets no
        answer while a call is running does not end the session: a server that
        answers one request at a time is busy, not gone, and the call ends by
        its own timeout or by the connection really closing.
        """
        while True:
            # Checked before clearing the event, with no await in between, so no wake-up is lost.
            if self._stopping:
                return
            if self._client is not client:
                raise McpServerUnavailable("a call found the connection closed")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.config.ping_interval_s)
            if self._stopping or self._client is not client or self._calls_in_flight:
                continue
            started = self._calls_started
            with anyio.move_on_after(self.config.connect_timeout_s) as probe:
                listed = await self._list_tools(client)
            if probe.cancelled_caught:
                if self._calls_in_flight or self._calls_started != started:
                    continue
                raise TimeoutError(
                    f"the server did not answer a tools listing within {self.config.connect_timeout_s:g} s"
                )
            if _fingerprint(listed) != self._listed:
                log.info("MCP server %r changed its tools: now %d", self.name, len(listed))
                self._publish(listed)

    def _publish(self, listed: list[mcp_types.Tool]) -> None:
        self._listed = _fingerprint(listed)
        built: list[Tool] = []
        taken: set[str] = set()
        for remote in listed:
            tool = self._build(remote, taken)
            if tool is not None:
                taken.add(tool.name)
                built.append(tool)
        refused = self._registry.set_external(self.source, built)
        for name in refused:
            log.warning(
                "MCP server %r: tool %r is left out: another tool already has that name", self.name, name
            )

    def _build(self, remote: mcp_types.Tool, taken: set[str]) -> Tool | None:
        """The registry entry of one listed tool, or None (and one log line) when it cannot be served.

        Its schemas must pass agentloop.kernel.untrusted_schema: nothing they refer to
        is fetched, and an input schema the Reasoner would refuse is caught
        here, so one bad tool is left out instead of failing every run.
        """
        name = namespaced(self.name, remote.name, taken)
        schema = dict(remote.input_schema)
        description = (remote.description or remote.title or "")[:MAX_DESCRIPTION_CHARS]
        try:
            if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
                raise ValueError(f"its input schema is larger than {MAX_SCHEMA_BYTES} bytes")
            for which, checked in (("input", schema), ("output", remote.output_schema)):
                if checked is not None:
                    try:
                        check_schema(checked, max_bytes=MAX_SCHEMA_BYTES)
                    except SchemaRefused as exc:
                        raise ValueError(f"its {which} schema {exc}") from None
            return Tool(
                self._caller(remote.name),
                name=name,
                description=description or f"Tool {remote.name!r} of the MCP server {self.name!r}.",
                timeout_s=self.config.timeout_s,
                parameters=schema,
            )
        except Exception as exc:
            log.warning("MCP server %r: tool %r is left out: %s", self.name, remote.name, exc)
            return None

    def _caller(self, remote_name: str) -> Callable[..., Coroutine[Any, Any, str]]:
        async def call(**arguments: Any) -> str:
            return await self.call(remote_name, arguments)

        call.__name__ = "mcp_call"
        return call

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> str:
        """Run one tool of this server; raise McpToolError or McpServerUnavailable for the model to read."""
        client = self._client
        if client is None:
            raise McpServerUnavailable(f"MCP server {self.name!r} is not connected; it is being reconnected")
        self._calls_in_flight += 1
        self._calls_started += 1
        try:
            result = await self._request(client, tool, arguments)
        finally:
            self._calls_in_flight -= 1
        text = result_text(result)
        if result.is_error:
            raise McpToolError(text or f"{tool} reported an error without a message")
        return text

    async def _request(
        self, client: Client, tool: str, arguments: Mapping[str, Any]
    ) -> mcp_types.CallToolResult:
        """One tools/call on ``client``, its failures translated for the model."""
        try:
            return await client.call_tool(tool, dict(arguments))
        except MCPError as exc:
            if (size := too_large(exc, self._limit)) is not None:
                raise ResultTooLarge(size) from None
            if exc.code != mcp_types.CONNECTION_CLOSED:
                raise McpToolError(f"{exc.message} (MCP error {exc.code})") from None
            self._dropped(client)
            raise McpServerUnavailable(
                f"MCP server {self.name!r} closed the connection; reconnecting"
            ) from None
        except ValidationError as exc:
            raise McpToolError(
                f"{tool} answered with a result that does not follow the MCP protocol "
                f"({exc.error_count()} problems)"
            ) from None
        except Exception as exc:
            self._dropped(client)
            reason = describe_failure(exc, self.config)
            raise McpServerUnavailable(
                f"MCP server {self.name!r} could not be reached ({reason}); reconnecting"
            ) from None

    def _dropped(self, client: Client) -> None:
        if self._client is client:
            self._client = None
            self._wake.set()

    def _report(self, exc: BaseException) -> None:
        """One log line per state change: a start failure, a drop; retries are only logged at debug."""
        self._failures += 1
        reason = describe_failure(exc, self.config)
        if self._stopping:
            log.debug("MCP server %r closed: %s", self.name, reason)
        elif self._failures > 1:
            log.debug("MCP server %r: still unreachable: %s", self.name, reason)
        elif self._ever_connected:
            log.warning("MCP server %r disconnected: %s; reconnecting in the background", self.name, reason)
        else:
            log.error(
                "MCP server %r (%s) failed to start: %s; its tools are not served, the others are; "
                "retrying in the background",
                self.name,
                self.config.transport,
                reason,
            )


class McpServers:
    """Every configured MCP server of one ToolService, started and stopped together."""

    def __init__(self, connections: list[McpConnection]) -> None:
        self.connections = {connection.name: connection for connection in connections}
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    async def start(
        cls,
        registry: ToolRegistry,
        configs: Mapping[str, McpServerConfig],
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    ) -> McpServers:
        """Connect to every server and wait until each has connected or failed its first attempt.

        ``max_result_bytes`` is the service's AGENTLOOP_MAX_RESULT_BYTES: messages
        from the servers are bounded accordingly (tool_svc.mcp_transport).
        """
        connections = [
            McpConnection(name, config, registry, max_result_bytes) for name, config in configs.items()
        ]
        servers = cls(connections)
        for connection in servers.connections.values():
            servers._tasks.append(asyncio.create_task(connection.run(), name=f"mcp-{connection.name}"))
        for connection in servers.connections.values():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    connection.first_attempt.wait(), connection.config.connect_timeout_s + 5
                )
        return servers

    async def aclose(self, grace_s: float = 10.0) -> None:
        """Close every session from its own task; cancel the ones that do not finish within ``grace_s``."""
        for connection in self.connections.values():
            connection.stop()
        if not self._tasks:
            return
        _, pending = await asyncio.wait(self._tasks, timeout=grace_s)
        for task in pending:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()


@contextlib.asynccontextmanager
async def mcp_servers(
    registry: ToolRegistry,
    configs: Mapping[str, McpServerConfig],
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> AsyncIterator[McpServers]:
    """McpServers as a context manager (what tests and embedding applications use)."""
    servers = await McpServers.start(registry, configs, max_result_bytes)
    try:
        yield servers
    finally:
        await servers.aclose()
