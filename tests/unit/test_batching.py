"""Reading a stream ahead: every item once and in order, batched only when the consumer is behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from reasoner_svc.batching import in_batches


async def paced(items: list[int], gap_s: float, fail: Exception | None = None) -> AsyncIterator[int]:
    for item in items:
        await asyncio.sleep(gap_s)
        yield item
    if fail is not None:
        raise fail


async def test_a_consumer_that_keeps_up_gets_each_item_as_it_comes() -> None:
    batches = [batch async for batch in in_batches(paced(list(range(10)), 0.01))]
    assert batches == [[i] for i in range(10)]


async def test_a_consumer_that_falls_behind_gets_what_piled_up_in_one_batch() -> None:
    batches: list[list[int]] = []
    async for batch in in_batches(paced(list(range(20)), 0.002)):
        batches.append(batch)
        await asyncio.sleep(0.03)  # a slow hop downstream
    assert [item for batch in batches for item in batch] == list(range(20))
    assert len(batches) < 10
    assert max(len(batch) for batch in batches) > 1


async def test_a_failure_reaches_the_consumer_after_every_item_before_it() -> None:
    seen: list[int] = []

    async def consume() -> None:
        async for batch in in_batches(paced([1, 2, 3], 0.0, ValueError("stream broke"))):
            seen.extend(batch)

    with pytest.raises(ValueError, match="stream broke"):
        await consume()
    assert seen == [1, 2, 3]


async def test_the_reader_stops_when_the_consumer_leaves() -> None:
    read: list[int] = []

    async def endless() -> AsyncIterator[int]:
        i = 0
        while True:
            await asyncio.sleep(0.001)
            read.append(i)
            yield i
            i += 1

    batches = in_batches(endless(), limit=4)
    first = await anext(batches)
    assert first
    await batches.aclose()
    count = len(read)
    await asyncio.sleep(0.05)
    assert len(read) == count, "the reader went on after the consumer left"


async def test_the_reader_waits_when_the_consumer_is_far_behind() -> None:
    read: list[int] = []

    async def fast() -> AsyncIterator[int]:
        for i in range(100):
            read.append(i)
            yield i

    batches = in_batches(fast(), limit=4)
    try:
        got = await anext(batches)
        await asyncio.sleep(0.05)  # the consumer is busy elsewhere
        ahead = len(read) - len(got)
        assert ahead <= 6, f"{ahead} items read ahead with room for four"  # the queue's four, one in hand
        got += [item async for batch in batches for item in batch]
        assert got == list(range(100))
    finally:
        await batches.aclose()
