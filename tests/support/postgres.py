"""A real Postgres for tests: a throwaway database per test (or module) on a real server.

The server is `$AGENTLOOP_TEST_POSTGRES` (default
postgresql://postgres@127.0.0.1:5432/postgres, trust auth). When it cannot be
reached, a private cluster is initdb'd into a temporary directory, started on a
free port and stopped when the test process exits. Postgres is never mocked:
if neither works the tests fail with the reasons.

Use in a test module or conftest:

    @pytest.fixture
    async def pg_url() -> AsyncIterator[str]:
        async with fresh_postgres_database() as url:
            yield url

or directly `pg_url = pytest.fixture(fresh_postgres_url)`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import NullPool, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tests.support.net import free_port

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
ENV_VAR = "AGENTLOOP_TEST_POSTGRES"
DB_PREFIX = "agentloop_test_"

_T = TypeVar("_T")
_lock = threading.Lock()
_server: str | None = None


class PostgresUnavailable(RuntimeError):
    """Neither the configured server nor a throwaway cluster could be used."""


def _libpq(url: str) -> str:
    """The plain postgresql:// form (what psql and other tools take)."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def _admin_engine(url: str) -> AsyncEngine:
    """CREATE/DROP DATABASE cannot run inside a transaction, hence AUTOCOMMIT."""
    parsed = make_url(url).set(drivername="postgresql+asyncpg")
    return create_async_engine(
        parsed, isolation_level="AUTOCOMMIT", poolclass=NullPool, connect_args={"timeout": 5}
    )


async def _execute(url: str, sql: str) -> None:
    engine = _admin_engine(url)
    try:
        async with engine.connect() as conn:
            await conn.execute(text(sql))
    finally:
        await engine.dispose()


def run_coroutine(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine to completion from synchronous code, even inside a running event loop."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _probe(url: str) -> None:
    await _execute(url, "SELECT 1")


def server_url() -> str:
    """Base URL (database `postgres`) of a usable server, starting one if needed; cached per process."""
    global _server
    with _lock:
        if _server is None:
            configured = os.environ.get(ENV_VAR) or DEFAULT_SERVER
            try:
                run_coroutine(_probe(configured))
                _server = _libpq(configured)
            except Exception as exc:  # any failure to connect: the reason goes into the message
                _server = _start_throwaway_cluster(f"{configured}: {exc!r}")
        return _server


async def server_url_async() -> str:
    return await asyncio.to_thread(server_url)


def _find_binary(name: str) -> str | None:
    found = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
        reverse=True,
    )
    return found[0] if found else shutil.which(name)


def _start_throwaway_cluster(why_not_configured: str) -> str:
    initdb, pg_ctl = _find_binary("initdb"), _find_binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise PostgresUnavailable(
            f"Postgres is required by these tests. Could not connect to {why_not_configured}, and no "
            f"initdb/pg_ctl was found (install the postgresql package or set {ENV_VAR})."
        )
    prefix: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="agentloop-pg-"))
    if os.geteuid() == 0:
        # initdb refuses to run as root.
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresUnavailable(
                f"Could not connect to {why_not_configured}; running as root and there is no "
                "'postgres' OS user to run a throwaway cluster as."
            ) from None
        os.chown(workdir, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = workdir / "data", free_port()
    try:
        subprocess.run(
            [*prefix, initdb, "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        options = f"-p {port} -k {workdir} -h 127.0.0.1 -c fsync=off -c full_page_writes=off"
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-o", options, "-l", str(workdir / "log"), "-w", "start"],
            check=True,
            capture_output=True,
            timeout=120,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        shutil.rmtree(workdir, ignore_errors=True)
        raise PostgresUnavailable(
            f"Could not connect to {why_not_configured}, and starting a throwaway cluster with "
            f"{initdb} failed: {exc}\n{detail.decode(errors='replace')}"
        ) from None

    def stop() -> None:
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, check=False
        )
        shutil.rmtree(workdir, ignore_errors=True)

    atexit.register(stop)
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def database_url(name: str) -> str:
    """The SQLAlchemy (asyncpg) URL of database `name` on the test server."""
    base = make_url(server_url())
    return base.set(drivername="postgresql+asyncpg", database=name).render_as_string(hide_password=False)


async def create_database(template: str | None = None) -> str:
    """Create a uniquely named database (a copy of `template` if given); returns its name."""
    name = f"{DB_PREFIX}{uuid.uuid4().hex[:16]}"
    suffix = f' TEMPLATE "{template}"' if template else ""
    await _execute(await server_url_async(), f'CREATE DATABASE "{name}"{suffix}')
    return name


async def drop_database(name: str) -> None:
    """Drop the database, disconnecting anything still attached to it."""
    await _execute(await server_url_async(), f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@asynccontextmanager
async def fresh_postgres_database(template: str | None = None) -> AsyncIterator[str]:
    """A new empty database (or a copy of `template`) for the block; yields its asyncpg URL."""
    name = await create_database(template)
    try:
        yield database_url(name)
    finally:
        await drop_database(name)


async def fresh_postgres_url() -> AsyncIterator[str]:
    """Fixture body: a fresh database's `postgresql+asyncpg://` URL, dropped afterwards."""
    async with fresh_postgres_database() as url:
        yield url


class PrivateCluster:
    """A Postgres cluster of the test's own (initdb'd in a temporary directory, on a free port).

    For tests that stop, restart or crash the server: never the shared one
    other tests (and other test processes) use. Runs as the `postgres` OS
    user when the tests run as root (initdb refuses root).
    """

    def __init__(self) -> None:
        initdb, pg_ctl = _find_binary("initdb"), _find_binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise PostgresUnavailable("a private Postgres cluster needs initdb and pg_ctl on this machine")
        self._pg_ctl = pg_ctl
        self._prefix: list[str] = []
        self.workdir = Path(tempfile.mkdtemp(prefix="agentloop-private-pg-"))
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.workdir, user.pw_uid, user.pw_gid)
            self._prefix = ["runuser", "-u", "postgres", "--"]
        self.data = self.workdir / "data"
        self.port = free_port()
        command = [*self._prefix, initdb, "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8"]
        subprocess.run(
            [*command, "--no-sync"],
            check=True,
            capture_output=True,
            timeout=120,
        )

    @property
    def url(self) -> str:
        """The `postgres` database's asyncpg URL."""
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        options = f"-p {self.port} -k {self.workdir} -h 127.0.0.1 -c fsync=off -c full_page_writes=off"
        log_file = str(self.workdir / "log")
        subprocess.run(
            [*self._prefix, self._pg_ctl, "-D", str(self.data), "-o", options, "-l", log_file, *args],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._ctl("-w", "start")

    def restart(self, mode: str = "fast") -> None:
        """Stop the server (`fast`: every session is terminated; `immediate`: a crash) and start it again.

        Returns as soon as the server was told to start: it may still answer
        "the database system is starting up" for a moment, as a restarted
        server does.
        """
        self._ctl("-m", mode, "-W", "restart")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server."""
        self._ctl("-m", mode, "-w", "stop")

    def close(self) -> None:
        """Stop the server (if it runs) and delete its files."""
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop("immediate")
        shutil.rmtree(self.workdir, ignore_errors=True)


@asynccontextmanager
async def private_cluster() -> AsyncIterator[PrivateCluster]:
    """A started PrivateCluster for the block, deleted afterwards."""
    cluster = await asyncio.to_thread(PrivateCluster)
    try:
        await asyncio.to_thread(cluster.start)
        yield cluster
    finally:
        await asyncio.to_thread(cluster.close)
