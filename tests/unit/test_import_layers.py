"""The `agentloop` command sits on top: nothing it dispatches to may import it back.

The imports are checked in the source, function bodies included, because a deferred
import inside a function closes a cycle just the same once that function runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import agentloop

PACKAGE = Path(agentloop.__file__).parent


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_nothing_below_the_command_imports_it() -> None:
    below = [PACKAGE / "demo.py", PACKAGE / "dev.py", *sorted((PACKAGE / "commands").glob("*.py"))]
    offenders = {p.name: m for p in below if (m := {x for x in imported_modules(p) if x == "agentloop.cli"})}
    assert offenders == {}


def test_the_demo_asks_through_the_command_module() -> None:
    assert "agentloop.commands.ask.ask" in imported_modules(PACKAGE / "demo.py")
