"""TCP plumbing for tests: ports for services they start, proxies they put between a client and a service."""

from __future__ import annotations

import asyncio
import random
import socket
from pathlib import Path

_LISTENER_PORTS_FLOOR = 20000
"""Ports are picked from here up to the start of the kernel's ephemeral range."""


def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A loopback port nothing listens on now, and that no outgoing connection will take.

    A port from `bind(0)` lies in the ephemeral range, where the kernel also
    picks the local port of every outgoing connection: between the test
    choosing it and a child process binding it, a connection to Postgres or
    between services could take it, and the child would exit with "port
    already in use". Below that range only listeners take ports, so a port
    free now stays free unless another test picks the same one (random
    choice makes that rare, and the bind check rules out current holders).
    """
    ceiling = _ephemeral_floor()
    if ceiling - _LISTENER_PORTS_FLOOR < 1000:  # an unusual range: fall back to the kernel's choice
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    for _ in range(200):
        port = random.randrange(_LISTENER_PORTS_FLOOR, ceiling)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {_LISTENER_PORTS_FLOOR}..{ceiling - 1}")


async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    """Copy `src` to `dst` until `src` ends or either side breaks; then close `dst`.

    A reset connection is what these proxies exist to cause, so it ends the
    copy quietly instead of failing the test.
    """
    try:
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        dst.close()
