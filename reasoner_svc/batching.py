"""Reading a stream ahead of its consumer, and handing over what has piled up as one batch.

The Reasoner relays a model's streamed chunks to the gateway, one gRPC
message each. While the services keep up, each chunk is sent the moment it
arrives; once a process is short of CPU (hundreds of runs in flight on a
small machine), chunks that arrived meanwhile would still cost a message
each, at every hop. Reading the stream in a task of its own and sending
everything read since the last message as one costs nothing while nobody is
behind and cuts the messages exactly when the machine is busy: no timer, no
token held back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Generic, TypeVar

_T = TypeVar("_T")

READ_AHEAD = 256
"""Items read ahead of the consumer at most; the reader waits when that many are unsent."""


@dataclass(frozen=True, slots=True)
class _End:
    failure: BaseException | None = None


class _Batches(Generic[_T]):
    def __init__(self, source: AsyncIterator[_T], limit: int) -> None:
        self._source = source
        self._queue: asyncio.Queue[_T | _End] = asyncio.Queue(limit)

    async def read(self) -> None:
        try:
            async for item in self._source:
                await self._queue.put(item)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the consumer raises it, after what came before it
            await self._queue.put(_End(exc))
        else:
            await self._queue.put(_End())

    async def batches(self) -> AsyncIterator[list[_T]]:
        queue = self._queue
        while True:
            items: list[_T] = []
            item = await queue.get()
            while True:
                if isinstance(item, _End):
                    if items:
                        yield items
                    if item.failure is not None:
                        raise item.failure
                    return
                items.append(item)
                if queue.empty():
                    break
                item = queue.get_nowait()
            yield items


async def in_batches(source: AsyncIterator[_T], *, limit: int = READ_AHEAD) -> AsyncGenerator[list[_T], None]:
    """The items of `source` in order, in lists of whatever arrived while the last list was handled.

    `source` is read by a task of its own; an exception it raises reaches
    the consumer after every item before it. Leaving early (an error, a
    cancelled caller) stops the reader.
    """
    state = _Batches(source, limit)
    reader = asyncio.create_task(state.read())
    try:
        async for batch in state.batches():
            yield batch
    finally:
        reader.cancel()
        await asyncio.wait([reader])
