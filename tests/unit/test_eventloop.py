"""The services' event loop: uvloop unless AGENTLOOP_EVENT_LOOP=asyncio."""

from __future__ import annotations

import asyncio

import uvloop

from agentloop.kernel import eventloop


async def _loop_type() -> type:
    return type(asyncio.get_running_loop())


def test_services_run_on_uvloop_by_default() -> None:
    assert eventloop.loop_factory({}) is uvloop.new_event_loop
    assert issubclass(eventloop.run(_loop_type()), uvloop.Loop)


def test_asyncio_opts_out() -> None:
    assert eventloop.loop_factory({eventloop.ENV: "asyncio"}) is None
    assert eventloop.loop_factory({eventloop.ENV: " AsyncIO "}) is None
