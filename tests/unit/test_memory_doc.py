"""docs/memory.md's table of messages and stored facts is what the memory trigger really does."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.loop.memory import memory_instruction

DOC = Path(__file__).resolve().parents[2] / "docs" / "memory.md"
ROW = re.compile(r"^\| `(?P<message>[^`]+)` \| (?:`(?P<fact>[^`]+)`|\(nothing\)) \|$")


def test_every_row_of_the_stored_fact_table_matches_the_trigger() -> None:
    rows = [m for line in DOC.read_text().splitlines() if (m := ROW.match(line))]
    assert len(rows) >= 10
    for row in rows:
        assert memory_instruction(row["message"]) == row["fact"], row["message"]
