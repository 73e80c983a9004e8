"""`agentloop db wait`: what a gateway started without migrating waits on before it serves."""

from __future__ import annotations

import asyncio

import pytest

from agentloop.cli.main import main

pytestmark = pytest.mark.integration


async def test_db_wait_returns_once_the_schema_is_at_the_newest_revision(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # main() runs its own event loop: call it from a thread, as a process would.
    wait = ["db", "wait", "--url", database_url]
    assert await asyncio.to_thread(main, [*wait, "--timeout-s", "0.3"]) == 1
    assert "(empty database), not " in capsys.readouterr().err

    waiting = asyncio.create_task(asyncio.to_thread(main, [*wait, "--timeout-s", "60"]))
    assert await asyncio.to_thread(main, ["db", "upgrade", "--url", database_url]) == 0
    assert await waiting == 0
    assert "database at revision " in capsys.readouterr().out


async def test_db_wait_keeps_waiting_while_the_database_is_unreachable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = "postgresql+asyncpg://agentloop@127.0.0.1:1/agentloop"
    assert await asyncio.to_thread(main, ["db", "wait", "--url", url, "--timeout-s", "0.5"]) == 1
    assert "unreachable (" in capsys.readouterr().err
