"""The MCP servers a ToolService connects to, read from one JSON or TOML file.

The file uses the ``mcpServers`` layout most MCP hosts share, so a block
copied from another host's configuration works here::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"]},
        "search": {"url": "https://search.example/mcp",
                   "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}}
    }}

A server is either a stdio command (``command``, ``args``, ``env``, ``cwd``)
or a streamable HTTP endpoint (``url``, ``headers``). ``${NAME}`` in env
values and headers is replaced by the ToolService's environment variable, so
secrets stay out of the file. Every problem is reported as one line naming the
file and the field path.
"""

from __future__ import annotations

import json
import re
import string
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentloop.kernel.settings import environment

MAX_CONFIG_BYTES = 1024 * 1024
MAX_SERVERS = 64
SERVER_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,32}$")
"""Server names prefix tool names (``<server>__<tool>``), so they use the tool-name alphabet."""


class McpConfigError(ValueError):
    """The MCP configuration file is missing, unreadable or invalid; the message is one line."""


class McpServerConfig(BaseModel):
    """One MCP server: how to reach it and how its tools are run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(default=None, min_length=1, max_length=4096)
    """stdio: the executable that runs the server."""
    args: tuple[str, ...] = Field(default=(), max_length=256)
    """stdio: its command-line arguments."""
    env: dict[str, str] = Field(default_factory=dict, max_length=256)
    """stdio: extra environment variables, set on top of a minimal inherited environment."""
    cwd: str | None = None
    """stdio: the working directory of the server process."""
    url: str | None = Field(default=None, pattern=r"^https?://", max_length=4096)
    """streamable HTTP: the endpoint URL (usually ending in /mcp)."""
    headers: dict[str, str] = Field(default_factory=dict, max_length=64)
    """streamable HTTP: headers sent with every request (authorization, for example)."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Limit for one call of this server's tools (the ToolService's own limit still applies)."""
    connect_timeout_s: float = Field(default=15.0, gt=0)
    """How long starting the server and listing its tools may take."""
    ping_interval_s: float = Field(default=15.0, gt=0)
    """How often an idle connection is checked, so a dropped server is noticed and reconnected."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (stdio) or 'url' (streamable HTTP)")
        if self.url is not None and (self.args or self.env or self.cwd is not None):
            raise ValueError("'args', 'env' and 'cwd' only apply to a stdio server ('command')")
        if self.command is not None and self.headers:
            raise ValueError("'headers' only apply to a streamable HTTP server ('url')")
        return self

    @property
    def transport(self) -> str:
        """ "stdio" or "http", for log lines."""
        return "stdio" if self.command is not None else "http"


def load_mcp_config(path: str, environ: Mapping[str, str] | None = None) -> dict[str, McpServerConfig]:
    """The servers declared in the file at ``path`` (``.toml`` is TOML, anything else JSON), by name."""
    raw = _read(path)
    try:
        data: Any = tomllib.loads(raw) if path.endswith(".toml") else json.loads(raw)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise McpConfigError(
            f"{path}: not valid {'TOML' if path.endswith('.toml') else 'JSON'}: {exc}"
        ) from None
    return parse_mcp_config(data, path, environment() if environ is None else environ)


def parse_mcp_config(data: Any, source: str, environ: Mapping[str, str]) -> dict[str, McpServerConfig]:
    """Validate an already-decoded configuration; ``source`` names it in error messages."""
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise McpConfigError(f"{source}: expected an object with an 'mcpServers' object of servers by name")
    servers: dict[str, Any] = data["mcpServers"]
    if len(servers) > MAX_SERVERS:
        raise McpConfigError(
            f"{source}: mcpServers has {len(servers)} servers; at most {MAX_SERVERS} are allowed"
        )
    unknown = sorted(key for key in data if key != "mcpServers")
    if unknown:
        raise McpConfigError(f"{source}: unknown top-level key {unknown[0]!r}; only 'mcpServers' is read")
    parsed: dict[str, McpServerConfig] = {}
    for name, entry in servers.items():
        where = f"{source}: mcpServers.{name}"
        if not SERVER_NAME_PATTERN.fullmatch(name):
            raise McpConfigError(f"{where}: server names must match {SERVER_NAME_PATTERN.pattern}")
        try:
            config = McpServerConfig.model_validate(entry)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"])
            message = str(error["msg"]).removeprefix("Value error, ")
            raise McpConfigError(f"{where}{'.' + field if field else ''}: {message}") from None
        parsed[name] = _expand(config, where, environ)
    return parsed


def _read(path: str) -> str:
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot read the MCP configuration: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise McpConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise McpConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _expand(config: McpServerConfig, where: str, environ: Mapping[str, str]) -> McpServerConfig:
    """Substitute ``${NAME}`` in env values and headers; an unset variable is an error, not ""."""

    def expand(field: str, values: dict[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in values.items():
            try:
                out[key] = string.Template(value).substitute(environ)
            except KeyError as exc:
                raise McpConfigError(
                    f"{where}.{field}.{key}: environment variable {exc.args[0]} is not set"
                ) from None
            except ValueError as exc:
                raise McpConfigError(f"{where}.{field}.{key}: {exc} (write a literal $ as $$)") from None
        return out

    return config.model_copy(
        update={"env": expand("env", config.env), "headers": expand("headers", config.headers)}
    )
