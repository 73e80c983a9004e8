"""Which messages store a memory, what is stored, and how recall ranks facts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.loop.memory import Memory, memory_instruction, rank


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("Remember that my name is Ana.", "my name is Ana"),
        ("remember: I prefer metric units", "I prefer metric units"),
        ("Please remember I work at ACME", "I work at ACME"),
        ("记住我喜欢喝茶。", "我喜欢喝茶"),
        ("请记住：我住在上海", "我住在上海"),
    ],
)
def test_memory_instructions_are_detected(text: str, fact: str) -> None:
    assert memory_instruction(text) == fact


@pytest.mark.parametrize(
    "text", ["What do you remember?", "Do you remember me", "remember", "Remembering is hard", "hello", ""]
)
def test_other_messages_store_nothing(text: str) -> None:
    assert memory_instruction(text) is None


def test_recall_prefers_overlap_then_recency() -> None:
    now = datetime.now(UTC)
    facts = [
        Memory("1", "u", "my name is Ana", now - timedelta(days=3)),
        Memory("2", "u", "I prefer metric units", now - timedelta(days=2)),
        Memory("3", "u", "my cat is called Miso", now - timedelta(days=1)),
    ]
    assert [m.memory_id for m in rank(facts, "what units do I prefer?", limit=2)] == ["2", "3"]
    assert [m.memory_id for m in rank(facts, "hello", limit=3)] == ["3", "2", "1"]
