"""`agentloop serve tools --tools ...` as a user runs it: from their own directory, no PYTHONPATH.

Every test runs the installed console script in a fresh temporary directory,
so nothing of this repository is importable unless the loader makes it so.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import grpc
import pytest

from agentloop.v1 import tools_pb2, tools_pb2_grpc

pytestmark = pytest.mark.integration

AGENTLOOP = str(Path(sys.executable).with_name("agentloop"))

GOOD = '''
from tool_svc import tool

@tool
def greet(name: str) -> str:
    """Greet someone by name."""
    return "hello " + name
'''


def user_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENTLOOP_TOOL_MODULES")}
    env["AGENTLOOP_SQL_DATABASE"] = str(tmp_path / "sample.db")
    return env


def serve_tools(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`agentloop serve tools` run from `tmp_path` as a user would, until it exits (a broken module)."""
    return subprocess.run(
        [AGENTLOOP, "serve", "tools", "--port", "0", *args],
        cwd=tmp_path,
        env=user_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )


def write(directory: Path, relative: str, source: str) -> None:
    path = directory / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")


async def test_tools_by_file_path_and_by_module_name_serve_from_the_current_directory(tmp_path: Path) -> None:
    write(tmp_path, "my_tools.py", GOOD)
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/helpers.py", "PREFIX = 'sum: '\n")
    write(
        tmp_path,
        "pkg/more_tools.py",
        '''
        from pkg.helpers import PREFIX
        from tool_svc import tool

        @tool
        def total(values: list[int]) -> str:
            """Add up numbers."""
            return PREFIX + str(sum(values))
        ''',
    )
    process = await asyncio.create_subprocess_exec(
        AGENTLOOP,
        "serve",
        "tools",
        "--port",
        "0",
        "--tools",
        "./my_tools.py",
        "--tools",
        "pkg.more_tools",
        cwd=tmp_path,
        env=user_env(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        assert line.startswith("ToolService listening on port "), line
        port = int(line.rsplit(" ", 1)[1])
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = await tools_pb2_grpc.ToolServiceStub(channel).ListTools(
                tools_pb2.ListToolsRequest(names=["greet", "total"]), timeout=10
            )
        assert sorted(spec.name for spec in reply.tools) == ["greet", "total"]
        assert {spec.name: spec.description for spec in reply.tools}["greet"] == "Greet someone by name."
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 30)


CASES = {
    "syntax": (
        '''
        from tool_svc import tool

        @tool
        def greet(name: str) -> str:
            """Greet."""
            return ("hello " + name
        ''',
        ":6: syntax error",
        "fix the code at that line",
    ),
    "import": (
        """
        from tool_svc import tool
        import agentloop_surely_missing_dependency
        """,
        ":2: ",
        "'agentloop_surely_missing_dependency', which is not installed",
    ),
    "signature": (
        '''
        from tool_svc import tool


        @tool
        def greet(name) -> str:
            """Greet."""
            return name
        ''',
        ":4: ",
        "parameter 'name' has no type annotation",
    ),
    "docstring": (
        """
        from tool_svc import tool

        @tool
        def greet(name: str) -> str:
            return name
        """,
        ":3: ",
        "has no docstring; add one",
    ),
    "raises": (
        """
        API_KEY = None
        raise RuntimeError("set API_KEY first")
        """,
        ":2: ",
        "raised RuntimeError: set API_KEY first while importing",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_broken_tool_module_is_one_line_naming_file_line_and_fix(tmp_path: Path, case: str) -> None:
    source, location, text = CASES[case]
    write(tmp_path, "my_tools.py", source)
    proc = serve_tools(tmp_path, "--tools", "./my_tools.py")
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"{tmp_path / 'my_tools.py'}{location}" in lines[0]
    assert text in lines[0]
    assert "Traceback" not in proc.stderr


def test_an_unknown_module_name_says_where_it_looked(tmp_path: Path) -> None:
    proc = serve_tools(tmp_path, "--tools", "pkg.nope")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"agentloop serve tools: cannot find tool module 'pkg.nope' in {tmp_path} or the installed packages; "
        "check the name, or give the file's path (--tools ./pkg/nope.py)"
    ]


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    write(tmp_path, "my_tools.py", CASES["raises"][0])
    proc = serve_tools(tmp_path, "--tools", "./my_tools.py", "--debug")
    assert proc.returncode == 2
    assert "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.splitlines()[-1].endswith("while importing; fix the code at that line")
