"""Every example runs self-contained and, twice, against a running stack (`agentloop dev`).

Both from outside the repository (another working directory, no PYTHONPATH), so an example
that still needed the test harness would fail here; twice against the same gateway, so thread
and user ids that collide with an earlier run would fail too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = sorted(
    p.stem for p in EXAMPLES.glob("*.py") if "run_example(" in p.read_text() and p.stem != "_harness"
)
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLOOP_", "OPENAI_", "DATABASE_"))}
ENV |= {"GRPC_VERBOSITY": "ERROR", "PYTHONUNBUFFERED": "1"}
ENV.pop("PYTHONPATH", None)


DOCS = EXAMPLES.parent / "docs"
UNIQUE_SUFFIX = re.compile(r"-[0-9a-f]{8}\b")
"""What `unique()` appends to ids in the examples; the pages show the ids without it."""


def printed_on_its_page(name: str) -> list[str] | None:
    """The lines a docs page says `examples/<name>.py --self-contained` prints, if a page does."""
    for page in DOCS.glob("*.md"):
        text = page.read_text()
        start = text.find(f"Run it: `python examples/{name}.py --self-contained`")
        if start < 0 or "It prints" not in text[start:]:
            continue
        block = re.search(r"```\w*\n(.*?)```", text[text.index("It prints", start) :], re.DOTALL)
        assert block is not None, f"{page.name}: no block after 'It prints'"
        return block.group(1).splitlines()
    return None


def example(
    name: str, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), *args],
        cwd=cwd,
        env=env or ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_feature_has_an_example() -> None:
    assert len(NAMES) >= 10


@pytest.mark.parametrize("name", NAMES)
def test_example_runs_self_contained_and_twice_against_a_running_stack(name: str, tmp_path: Path) -> None:
    alone = example(name, tmp_path, "--self-contained")
    assert alone.returncode == 0, alone.stderr
    shown = printed_on_its_page(name)
    if shown is not None:  # the feature page quotes what the example prints
        printed = [UNIQUE_SUFFIX.sub("", line) for line in alone.stdout.splitlines()]
        if name == "serial_tools":  # parallel calls start in either order
            assert sorted(printed) == sorted(shown)
        else:
            assert printed == shown

    script = tmp_path / "script.json"
    script.write_text(example(name, tmp_path, "--print-script").stdout)
    env = ENV | {"AGENTLOOP_HOME": str(tmp_path)}
    if name == "hooks":  # what the example's self-contained gateway is configured with
        env |= {
            "AGENTLOOP_HOOK_MODULES": "my_hooks",
            "AGENTLOOP_HOOKS": "redact_secrets",
            "AGENTLOOP_CLIENT_HOOKS": "audit,house_style,sign",
        }
    tools = [a for m in ("example_tools", "caller_tools") for a in ("--tools", str(EXAMPLES / f"{m}.py"))]
    dev = subprocess.Popen(
        [sys.executable, "-m", "agentloop.cli", "dev", *tools, "--port", "0", "--script", str(script)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert dev.stdout is not None
        port = None
        for line in dev.stdout:
            if match := re.search(r"gateway listening on port (\d+)", line):
                port = match.group(1)
                break
        assert port is not None, "agentloop dev did not start"
        for _ in range(2):
            against = example(name, tmp_path, env=ENV | {"AGENTLOOP_GATEWAY_ADDR": f"127.0.0.1:{port}"})
            assert against.returncode == 0, against.stderr
            assert against.stdout.splitlines()[0] == alone.stdout.splitlines()[0]
    finally:
        dev.terminate()
        dev.wait(timeout=30)
