"""Long-term memories through the Store: per user, newest first, deleted for good.

On SQLite and Postgres alike (see conftest.py).
"""

from __future__ import annotations

from datetime import timedelta

from gateway.store.sql import SqlStore

ANA, BO = "ana", "bo"


async def test_an_added_memory_is_listed_exactly_as_returned(store: SqlStore) -> None:
    added = await store.add_memory(ANA, "my favourite colour is green")
    assert (added.user_id, added.text) == (ANA, "my favourite colour is green")
    assert added.created_at.utcoffset() == timedelta(0)
    assert await store.list_memories(ANA) == [added]


async def test_memories_are_listed_newest_first_in_pages(store: SqlStore) -> None:
    added = [await store.add_memory(ANA, f"fact {i}") for i in range(5)]
    newest_first = [m.memory_id for m in reversed(added)]
    assert [m.memory_id for m in await store.list_memories(ANA)] == newest_first
    first = await store.list_memories(ANA, limit=2)
    assert [m.memory_id for m in first] == newest_first[:2]
    await store.add_memory(ANA, "a newer fact")  # before the cursor: it shifts nothing
    second = await store.list_memories(ANA, limit=2, after=(first[-1].created_at, first[-1].memory_id))
    assert [m.memory_id for m in second] == newest_first[2:4]
    rest = await store.list_memories(ANA, after=(second[-1].created_at, second[-1].memory_id))
    assert [m.memory_id for m in rest] == newest_first[4:]
    assert await store.list_memories(ANA, limit=3, after=(rest[-1].created_at, rest[-1].memory_id)) == []


async def test_a_user_sees_and_deletes_only_their_own_memories(store: SqlStore) -> None:
    anas = await store.add_memory(ANA, "ana likes tea")
    bos = await store.add_memory(BO, "bo likes coffee")
    assert await store.list_memories(ANA) == [anas]
    assert await store.list_memories(BO) == [bos]
    assert await store.list_memories("cy") == []
    assert not await store.delete_memory(BO, anas.memory_id)
    assert await store.list_memories(ANA) == [anas]


async def test_deleting_a_memory_removes_that_one_for_good(store: SqlStore, store_b: SqlStore) -> None:
    keep = await store.add_memory(ANA, "keep me")
    drop = await store.add_memory(ANA, "forget me")
    assert await store.delete_memory(ANA, drop.memory_id)
    assert await store_b.list_memories(ANA) == [keep]
    assert not await store.delete_memory(ANA, drop.memory_id)
    assert not await store.delete_memory(ANA, "no-such-memory")
    assert await store.list_memories(ANA) == [keep]


async def test_memories_outlive_the_threads_that_pruning_deletes(store: SqlStore) -> None:
    await store.create_thread("t", ANA)
    kept = await store.add_memory(ANA, "the user's name is Ana")
    stats = await store.prune(keep_last=1, idle_ttl_s=0.0)
    assert stats.threads_deleted == 1
    assert await store.list_memories(ANA) == [kept]
