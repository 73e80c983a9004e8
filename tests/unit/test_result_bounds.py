"""Tool results bounded in bytes: SQL rows cut while fetched, any result over the cap an error result."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.v1 import common_pb2
from tool_svc import ToolRegistry
from tool_svc.builtins.sql import MAX_CELL_CHARS, ReadOnlyDatabase
from tool_svc.executor import MAX_BATCH_RESULT_BYTES, execute


@pytest.fixture
def db(tmp_path: Path) -> ReadOnlyDatabase:
    return ReadOnlyDatabase(tmp_path / "shop.db", row_limit=100, max_rows_bytes=50_000)


def wide(columns: int, rows: int, chars: int) -> str:
    cells = ", ".join(f"printf('%.*c', {chars}, 'x') AS c{i}" for i in range(columns))
    numbers = f"WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {rows})"
    return f"{numbers} SELECT {cells} FROM r"


def test_long_cells_and_blobs_are_cut(db: ReadOnlyDatabase) -> None:
    out = db.query("SELECT printf('%.*c', 100000, 'y') AS t, zeroblob(100000) AS b", 10)
    text, blob = out["rows"][0]
    assert text == "y" * MAX_CELL_CHARS + f"... [cut at {MAX_CELL_CHARS} characters]"
    assert blob == "00" * (MAX_CELL_CHARS // 2) + f"... [cut at {MAX_CELL_CHARS} characters]"
    assert out["truncated"] is False


def test_fetching_stops_at_the_byte_budget(db: ReadOnlyDatabase) -> None:
    out = db.query(wide(columns=4, rows=100, chars=10_000), 100)
    # Each row is four cut cells of ~4 KB: 3 rows fit in 50 KB, the 4th would not.
    assert len(out["rows"]) == 3
    assert out["truncated"] is True
    assert "select fewer or narrower columns" in out["note"]


def test_small_results_are_untouched(db: ReadOnlyDatabase) -> None:
    out = db.query("SELECT name FROM products ORDER BY id", 3)
    assert len(out["rows"]) == 3
    assert out["truncated"] is True
    assert "note" not in out


def test_too_many_columns_is_an_error(db: ReadOnlyDatabase) -> None:
    columns = ", ".join(f"{i} AS c{i}" for i in range(150))
    with pytest.raises(ValueError, match="too many columns"):
        db.query(f"SELECT {columns}", 1)


def registry() -> ToolRegistry:
    def big(size: int, multibyte: bool = False) -> object:
        """Return about ``size`` bytes."""
        return {"data": ("é" * (size // 2)) if multibyte else ("x" * size)}

    return ToolRegistry([big])


async def results(calls: list[common_pb2.ToolCall], max_result_bytes: int) -> list[common_pb2.ToolResult]:
    events = execute(registry(), calls, 5, 8, max_result_bytes=max_result_bytes)
    return [e async for e in events if isinstance(e, common_pb2.ToolResult)]


async def test_a_result_over_the_cap_is_a_too_large_error() -> None:
    calls = [
        common_pb2.ToolCall(id="small", name="big", arguments_json='{"size": 1000}'),
        common_pb2.ToolCall(id="ascii", name="big", arguments_json='{"size": 5000}'),
        common_pb2.ToolCall(id="utf8", name="big", arguments_json='{"size": 3000, "multibyte": true}'),
    ]
    by_id = {r.tool_call_id: r for r in await results(calls, max_result_bytes=2048)}
    assert not by_id["small"].is_error
    for key in ("ascii", "utf8"):
        assert by_id[key].error_kind == common_pb2.TOOL_ERROR_KIND_TOO_LARGE
        assert "a tool result may hold at most 2048 bytes" in by_id[key].content


async def test_a_batch_is_held_to_its_share_of_the_message_limit() -> None:
    size = 4 * 1024 * 1024
    calls = [
        common_pb2.ToolCall(id=f"c{i}", name="big", arguments_json=f'{{"size": {size - 20}}}')
        for i in range(6)
    ]
    got = await results(calls, max_result_bytes=size)
    kept = [r for r in got if not r.is_error]
    assert len(kept) == MAX_BATCH_RESULT_BYTES // size  # four results of just under 4 MiB fit, two do not
    assert sum(len(r.content) for r in kept) <= MAX_BATCH_RESULT_BYTES
    assert {r.error_kind for r in got if r.is_error} == {common_pb2.TOOL_ERROR_KIND_TOO_LARGE}


async def test_the_cap_must_leave_room_in_a_batch() -> None:
    with pytest.raises(ValueError, match="max_result_bytes"):
        await results([common_pb2.ToolCall(id="c", name="big")], max_result_bytes=MAX_BATCH_RESULT_BYTES + 1)
