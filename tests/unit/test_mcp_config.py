"""MCP configuration, tool naming, result conversion and the registry's external tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from agentloop.kernel.settings import ToolSettings
from tool_svc.mcp_client import namespaced, result_text
from tool_svc.mcp_config import MAX_CONFIG_BYTES, McpConfigError, load_mcp_config, parse_mcp_config
from tool_svc.registry import NAME_PATTERN, ArgumentError, Tool, ToolRegistry


def parse(servers: Any, env: dict[str, str] | None = None) -> Any:
    return parse_mcp_config({"mcpServers": servers}, "mcp.json", env or {})


def test_stdio_and_http_servers_are_read() -> None:
    configs = parse(
        {
            "files": {"command": "npx", "args": ["-y", "server"], "env": {"ROOT": "/data"}},
            "search": {"url": "https://search.example/mcp", "headers": {"X-Key": "k"}, "timeout_s": 5},
        }
    )
    assert configs["files"].transport == "stdio"
    assert configs["files"].args == ("-y", "server")
    assert configs["search"].transport == "http"
    assert configs["search"].headers == {"X-Key": "k"}
    assert configs["search"].timeout_s == 5


def test_the_config_file_comes_from_the_environment() -> None:
    assert ToolSettings.from_env({"AGENTLOOP_MCP_CONFIG": "/etc/mcp.json"}).mcp_config == "/etc/mcp.json"
    assert ToolSettings.from_env({}).mcp_config == ""


def test_env_and_headers_take_variables_from_the_environment() -> None:
    configs = parse(
        {"s": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X-Cost": "$$5"}}},
        {"TOKEN": "abc"},
    )
    assert configs["s"].headers == {"Authorization": "Bearer abc", "X-Cost": "$5"}


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        (
            {"s": {"url": "http://h/mcp", "headers": {"A": "${UNSET_VAR}"}}},
            "mcpServers.s.headers.A: environment",
        ),
        ({"s": {}}, "mcpServers.s: give either 'command'"),
        ({"s": {"command": "x", "url": "http://h/mcp"}}, "mcpServers.s: give either 'command'"),
        ({"s": {"command": "x", "headers": {"a": "b"}}}, "mcpServers.s: 'headers' only apply"),
        ({"s": {"url": "http://h/mcp", "args": ["a"]}}, "mcpServers.s: 'args', 'env' and 'cwd' only"),
        ({"s": {"url": "ftp://h"}}, r"mcpServers\.s\.url: String should match"),
        ({"s": {"command": "x", "tiemout_s": 3}}, r"mcpServers\.s\.tiemout_s: Extra inputs"),
        ({"bad.name": {"command": "x"}}, r"mcpServers\.bad\.name: server names must match"),
        (
            {"s": {"command": "x", "timeout_s": 0}},
            r"mcpServers\.s\.timeout_s: Input should be greater than 0",
        ),
    ],
)
def test_invalid_servers_are_one_line_with_the_field_path(servers: Any, message: str) -> None:
    with pytest.raises(McpConfigError, match=f"^mcp.json: {message}") as caught:
        parse(servers)
    assert "\n" not in str(caught.value)


def test_the_top_level_shape_is_checked() -> None:
    with pytest.raises(McpConfigError, match="expected an object with an 'mcpServers' object"):
        parse_mcp_config({"servers": {}}, "mcp.json", {})
    with pytest.raises(McpConfigError, match="unknown top-level key 'extra'"):
        parse_mcp_config({"mcpServers": {}, "extra": 1}, "mcp.json", {})


def test_files_are_json_or_toml_and_bounded(tmp_path: Path) -> None:
    toml = tmp_path / "mcp.toml"
    toml.write_text('[mcpServers.calc]\ncommand = "python"\nargs = ["server.py"]\n', encoding="utf-8")
    assert load_mcp_config(str(toml))["calc"].args == ("server.py",)

    broken = tmp_path / "mcp.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(McpConfigError, match=r"mcp\.json: not valid JSON"):
        load_mcp_config(str(broken))

    big = tmp_path / "big.json"
    big.write_text(json.dumps({"mcpServers": {}, "pad": "x" * MAX_CONFIG_BYTES}), encoding="utf-8")
    with pytest.raises(McpConfigError, match="larger than"):
        load_mcp_config(str(big))

    with pytest.raises(McpConfigError, match="cannot read the MCP configuration"):
        load_mcp_config(str(tmp_path / "absent.json"))


def test_names_are_namespaced_and_fit_the_model_api_rule() -> None:
    assert namespaced("files", "read_file", set()) == "files__read_file"
    assert namespaced("web", "word.count", set()) == "web__word_count"
    long = namespaced("server", "x" * 100, set())
    assert len(long) == 64
    assert NAME_PATTERN.fullmatch(long)
    assert long == namespaced("server", "x" * 100, set())  # stable across reconnects
    # Two remote names that sanitize alike stay distinct.
    first = namespaced("web", "a.b", set())
    second = namespaced("web", "a/b", {first})
    assert first != second
    assert NAME_PATTERN.fullmatch(second)


def test_result_text_reads_text_and_names_other_blocks() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(type="text", text="first"),
            mcp_types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
        ],
        is_error=False,
    )
    assert result_text(result) == "first\n[image image/png, 8 base64 characters]"
    structured = mcp_types.CallToolResult(content=[], structured_content={"n": 1}, is_error=False)
    assert result_text(structured) == '{"n": 1}'


async def test_a_tool_defined_by_a_json_schema_validates_and_passes_arguments() -> None:
    seen: dict[str, Any] = {}

    async def call(**arguments: Any) -> str:
        seen.update(arguments)
        return "ok"

    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
    built = Tool(call, name="files__read", description="Read a file.", parameters=schema)
    assert json.loads(built.spec().parameters_json_schema)["required"] == ["path"]
    with pytest.raises(ArgumentError, match=r"\$\.path: is required"):
        built.bind("{}")
    assert await built.invoke(built.bind('{"path": "/a"}')) == "ok"
    assert seen == {"path": "/a"}
    with pytest.raises(ValueError, match="of type 'object'"):
        Tool(call, name="bad", parameters={"type": "string"})


def test_external_tools_are_swapped_per_source_and_never_shadow_others() -> None:
    def python_tool() -> str:
        """A Python tool."""
        return ""

    async def call(**arguments: Any) -> str:
        return ""

    def external(name: str) -> Tool:
        return Tool(call, name=name, description="d", parameters={"type": "object"})

    registry = ToolRegistry([python_tool])
    assert registry.set_external("mcp:a", [external("a__one"), external("python_tool")]) == ["python_tool"]
    assert registry.names() == ("a__one", "python_tool")
    assert registry.set_external("mcp:a", [external("a__two")]) == []
    assert registry.names() == ("a__two", "python_tool")
    assert registry.set_external("mcp:b", [external("a__two")]) == ["a__two"]
    assert registry.get("python_tool") is not None
