"""Code blocks of the docs that users copy: run as they stand, outside this repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DOCS = Path(__file__).resolve().parents[2] / "docs"


def python_block(page: str, after: str) -> str:
    """The first ```python block of `page` after the heading `after`."""
    text = (DOCS / page).read_text()
    match = re.search(r"```python\n(.*?)```", text[text.index(after) :], re.DOTALL)
    assert match is not None, f"no python block after {after!r} in {page}"
    return match.group(1)


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_the_scripted_model_pytest_snippet_runs_in_a_fresh_directory(tmp_path: Path, mode: str) -> None:
    (tmp_path / "test_snippet.py").write_text(python_block("scripted-model.md", "## Using it from pytest"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    options = ["-o", f"asyncio_mode={mode}", "-o", "asyncio_default_fixture_loop_scope=function"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, "test_snippet.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_the_testing_snippet_of_the_client_page_runs_in_a_fresh_directory(tmp_path: Path) -> None:
    (tmp_path / "test_my_tools.py").write_text(python_block("client.md", "## Testing your tools"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_tools.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_the_app_on_the_client_page_is_the_tested_example() -> None:
    app = (DOCS.parent / "examples" / "three_tools" / "app.py").read_text()
    shown = python_block("client.md", "## A small app")
    assert all(line in app for line in shown.splitlines())
