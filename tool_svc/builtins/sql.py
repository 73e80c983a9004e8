"""Read-only SQL tools over a SQLite database (by default a small sample shop).

The model writes arbitrary SQL, so safety cannot rest on inspecting the text.
It is read-only by construction, in layers that each suffice on their own: the
file is opened with ``mode=ro``, ``PRAGMA query_only`` is set, and an
authorizer refuses every action except reading (no INSERT/UPDATE/DELETE, DDL,
ATTACH, transactions or PRAGMA writes, however the statement is dressed up)
and every function not on a list of plain SQL functions (so no
``load_extension``, and no ``fts3_tokenizer``, which hands out a pointer into
the SQLite library and, given one back, calls it). A model's statement must
also be a SELECT, which SQLite itself decides by compiling it as a subquery:
VACUUM (whose INTO writes a file) and PRAGMA never get that far, since SQLite
asks no authorizer about them until they run.

Each query gets a bounded share of the process: a progress handler stops it
past its time limit, a length limit caps any single value, and the SQL tools
run on their own few threads (MAX_CONCURRENT_QUERIES), so a burst of runaway
queries waits for those threads instead of filling the pool every other
synchronous tool runs on. Results are bounded in bytes while they are fetched:
long cells are cut and fetching stops once the rows pass a byte budget, so a
few wide rows of megabyte strings cannot fill the ToolService's memory.

The tools carry flow-guidance rules (next steps) for the text-to-SQL loop:
describe a table, write a SELECT, check it with sql_validate (which compiles
it without running it), run it with sql_query, then answer from the rows.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar

from agentloop.kernel.settings import cache_home
from tool_svc.registry import NextStep, Tool, tool

T = TypeVar("T")
R = TypeVar("R")

SAMPLE_SQL = Path(__file__).with_name("sample_db.sql")
SAMPLE_APPLICATION_ID = 0x41474C50
"""Stamped into databases built from SAMPLE_SQL, so only those are ever rebuilt or replaced."""
QUERY_TIME_LIMIT_S = 2.0
MAX_CONCURRENT_QUERIES = 2
"""SQL calls that run at once per database; the others wait their turn (under their call's timeout)."""
PROGRESS_EVERY = 10_000
"""Virtual-machine steps between two checks of a query's time limit (about a millisecond)."""
MAX_VALUE_BYTES = 1_000_000
MAX_SQL_CHARS = 20_000
MAX_COLUMNS = 100
"""Most columns in a result (or table), so one row holds at most MAX_COLUMNS values of MAX_VALUE_BYTES."""
MAX_CELL_CHARS = 4_000
"""Longer text (or hex of a blob) in one cell is cut to this many characters, marked as cut."""
MAX_ROWS_BYTES = 256 * 1024
"""Fetching stops once the returned rows hold about this many bytes."""

_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, 33})
"""Reading only; 33 is SQLITE_RECURSIVE (WITH RECURSIVE), which the sqlite3 module does not name."""
_READ_PRAGMAS = frozenset({"table_info", "foreign_key_list"})
"""What sql_describe_table reads; a model's own statement must be a SELECT, so it never names a PRAGMA."""
_ALLOWED_FUNCTIONS = frozenset(
    {
        # core scalar functions (https://sqlite.org/lang_corefunc.html), less those that reach
        # outside the query (load_extension, fts3_tokenizer, sqlite_* introspection, changes)
        "abs", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "ifnull", "iif",
        "instr", "length", "like", "likelihood", "likely", "lower", "ltrim", "max", "min", "nullif",
        "octet_length", "printf", "quote", "random", "randomblob", "replace", "round", "rtrim", "sign",
        "soundex", "substr", "substring", "trim", "typeof", "unhex", "unicode", "unlikely", "upper",
        "zeroblob",
        # aggregates and window functions
        "avg", "count", "group_concat", "string_agg", "sum", "total", "row_number", "rank",
        "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value",
        "last_value", "nth_value",
        # date and time
        "date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff",
        # math
        "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh",
        "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power",
        "radians", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
        # JSON
        "->", "->>", "json", "jsonb", "json_array", "jsonb_array", "json_array_length",
        "json_error_position", "json_extract", "jsonb_extract", "json_insert", "jsonb_insert",
        "json_object", "jsonb_object", "json_patch", "jsonb_patch", "json_pretty", "json_quote",
        "json_remove", "jsonb_remove", "json_replace", "jsonb_replace", "json_set", "jsonb_set",
        "json_type", "json_valid", "json_group_array", "jsonb_group_array", "json_group_object",
        "jsonb_group_object",
    }
)  # fmt: skip
"""Functions a query may call: plain computation on values, nothing that touches the process."""
_READ_ONLY_HINT = "the database is read-only: only SELECT queries (WITH ... SELECT included) are allowed"
_DEDUPED_NAME = re.compile(r"^(.*):\d+$", re.DOTALL)
"""SQLite renames a repeated column of a subquery "name:N"; see ReadOnlyDatabase.validate."""

DESCRIBE_NEXT_STEPS = (
    NextStep(
        on="success",
        next_step="write_sql",
        hint="Write a SELECT over these columns and check it with sql_validate before running it.",
    ),
)
VALIDATE_NEXT_STEPS = (
    NextStep(
        on="success",
        next_step="run_sql",
        hint="The query is valid: run it with sql_query and answer from the rows.",
    ),
    NextStep(
        on="error",
        next_step="analyze_validation_error",
        hint="The query is not valid: read the error, fix the query, and check it again with sql_validate.",
    ),
)
QUERY_NEXT_STEPS = (
    NextStep(
        on="success",
        next_step="summarize_final_answer",
        hint="Answer the user's question from these rows; no more tools are needed.",
    ),
    NextStep(
        on="error",
        next_step="analyze_error",
        hint="The query failed: read the error, fix the query (sql_describe_table shows the columns), "
        "and check it with sql_validate before running it again.",
    ),
)


def default_database_path() -> Path:
    """Where the sample database is built when AGENTLOOP_SQL_DATABASE is not set."""
    return cache_home() / "agentloop" / "sample.db"


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _ALLOWED_FUNCTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _check_sql(sql: str) -> None:
    if not sql.strip():
        raise ValueError("query is empty")
    if len(sql) > MAX_SQL_CHARS:
        raise ValueError(f"query is {len(sql)} characters long; the limit is {MAX_SQL_CHARS}")


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _cell(value: Any) -> tuple[Any, int]:
    """A cell as it is returned (blobs as hex, long text cut) and its size in the JSON result."""
    if isinstance(value, bytes):
        value = value[: MAX_CELL_CHARS // 2 + 1].hex()
    if isinstance(value, str) and len(value) > MAX_CELL_CHARS:
        value = f"{value[:MAX_CELL_CHARS]}... [cut at {MAX_CELL_CHARS} characters]"
    return value, len(json.dumps(value, ensure_ascii=False).encode())


class ReadOnlyDatabase:
    """A SQLite file opened read-only for every operation, with a fresh connection per call.

    Connections are not shared because calls run in worker threads and sqlite3
    connections must not cross threads; opening one costs well under a
    millisecond. With a ``source`` script, the file is built from it on first
    use and rebuilt when the script is newer, but only if the file was built by
    us: a database someone else put at that path is used as is, never replaced.
    """

    def __init__(
        self,
        path: Path,
        row_limit: int,
        *,
        source: Path | None = SAMPLE_SQL,
        time_limit_s: float = QUERY_TIME_LIMIT_S,
        max_rows_bytes: int = MAX_ROWS_BYTES,
        max_concurrent: int = MAX_CONCURRENT_QUERIES,
    ) -> None:
        if row_limit < 1:
            raise ValueError(f"row_limit must be >= 1, got {row_limit}")
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be >= 1, got {max_concurrent}")
        self.path = path
        self.row_limit = row_limit
        self.source = source
        self.time_limit_s = time_limit_s
        self.max_rows_bytes = max_rows_bytes
        self._ready = False
        self._lock = threading.Lock()
        self._threads = ThreadPoolExecutor(max_concurrent, thread_name_prefix="sql")
        self._abandoned = threading.local()

    async def call(self, work: Callable[..., R], *args: Any) -> R:
        """Run one of the methods below on the database's own threads, waiting for a free one.

        A call cancelled while it waits (its timeout, say) is dropped without
        running; one cancelled while it runs is interrupted at the next
        progress check, so its thread is free for the next query at once.
        """
        abandoned = threading.Event()
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._threads, self._watched, abandoned, work, *args
            )
        except asyncio.CancelledError:
            abandoned.set()
            raise

    def _watched(self, abandoned: threading.Event, work: Callable[..., R], *args: Any) -> R:
        """``work(*args)`` on this thread, with ``abandoned`` for `_run`'s progress handler to watch."""
        self._abandoned.event = abandoned
        try:
            return work(*args)
        finally:
            self._abandoned.event = None

    def list_tables(self) -> list[str]:
        """Table and view names, sorted."""
        return self._run(self._tables)

    def describe_table(self, table: str) -> dict[str, Any]:
        """Columns (name, type, nullability, key), foreign keys and row count of one table."""

        def describe(conn: sqlite3.Connection) -> dict[str, Any]:
            tables = {name.lower(): name for name in self._tables(conn)}
            name = tables.get(table.lower())
            if name is None:
                raise ValueError(f"unknown table {table!r}; tables: {', '.join(tables.values())}")
            quoted = _quote(name)
            columns = [
                {"name": col, "type": kind, "nullable": not notnull and not pk, "primary_key": bool(pk)}
                for _cid, col, kind, notnull, _default, pk in conn.execute(f"PRAGMA table_info({quoted})")
            ]
            foreign_keys = [
                {"column": row[3], "references": f"{row[2]}.{row[4]}"}
                for row in conn.execute(f"PRAGMA foreign_key_list({quoted})")
            ]
            (count,) = conn.execute(f"SELECT count(*) FROM {quoted}").fetchone()
            return {"table": name, "columns": columns, "foreign_keys": foreign_keys, "row_count": count}

        return self._run(describe)

    def validate(self, sql: str) -> dict[str, Any]:
        """Check one read-only statement without running it: {"valid": True, "columns": [...]}.

        The statement is compiled under the same read-only connection and
        authorizer as query() (so writes, bad names and syntax errors raise
        ValueError exactly as they would there) but never executed:
        ``EXPLAIN QUERY PLAN`` only plans it. Its result columns come from
        compiling ``SELECT * FROM (<sql>) LIMIT 0``, which SQLite stops before
        reading a row; a statement that cannot be wrapped that way is not a
        SELECT (VACUUM, PRAGMA, EXPLAIN) and is refused.
        """
        _check_sql(sql)
        return self._run(lambda conn: {"valid": True, "columns": self._select_columns(conn, sql)})

    @classmethod
    def _select_columns(cls, conn: sqlite3.Connection, sql: str) -> list[str]:
        """The result columns of ``sql``, compiled but not run; ValueError unless it is one SELECT.

        Compiling it alone first gives the model SQLite's own error (syntax, an
        unknown name, a write the authorizer refuses); SQLite's parser then
        decides whether it is a SELECT, by accepting it as a subquery.
        """
        conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
        columns = cls._columns(conn, sql)
        if columns is None:
            raise ValueError(f"{_READ_ONLY_HINT} (this statement is not a SELECT)")
        return columns

    @staticmethod
    def _columns(conn: sqlite3.Connection, sql: str) -> list[str] | None:
        body = sql.rstrip()
        for candidate in dict.fromkeys((body, body.rstrip(";").rstrip())):
            try:
                cursor = conn.execute(f"SELECT * FROM (\n{candidate}\n) LIMIT 0")
            except sqlite3.Error:
                continue
            names: list[str] = []
            for name, *_rest in cursor.description or ():
                # Undo SQLite's renaming of repeated names ("id", "id:1") so the columns
                # read as sql_query will return them.
                match = _DEDUPED_NAME.match(name)
                seen = {known.lower() for known in names}
                names.append(match.group(1) if match and match.group(1).lower() in seen else name)
            return names
        return None

    def query(self, sql: str, limit: int) -> dict[str, Any]:
        """Rows of one read-only statement, at most min(limit, row_limit) of them.

        Rows are fetched one at a time and cut down as they arrive (see
        `_cell`); once they hold ``max_rows_bytes`` no more are fetched,
        "truncated" is set and "note" says why, so the model can ask for less.
        """
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        _check_sql(sql)
        cap = min(limit, self.row_limit)

        def run(conn: sqlite3.Connection) -> dict[str, Any]:
            self._select_columns(conn, sql)
            cursor = conn.execute(sql)
            if cursor.description is None:
                return {"columns": [], "rows": [], "truncated": False}
            rows: list[list[Any]] = []
            out: dict[str, Any] = {"columns": [column[0] for column in cursor.description], "rows": rows}
            size = 0
            for row in iter(cursor.fetchone, None):
                if len(rows) == cap:
                    out["truncated"] = True
                    return out
                cells = [_cell(value) for value in row]
                row_size = sum(n for _, n in cells)
                if size + row_size > self.max_rows_bytes:
                    out["truncated"] = True
                    out["note"] = (
                        f"stopped after {len(rows)} rows: the next row would take the result over "
                        f"{self.max_rows_bytes} bytes; select fewer or narrower columns, or fewer rows"
                    )
                    return out
                rows.append([value for value, _ in cells])
                size += row_size
            out["truncated"] = False
            return out

        return self._run(run)

    @staticmethod
    def _tables(conn: sqlite3.Connection) -> list[str]:
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        )
        return [name for (name,) in rows]

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on a fresh locked-down connection, translating sqlite errors for the model."""
        self._ensure_built()
        with closing(self._connect()) as conn:
            deadline = time.monotonic() + self.time_limit_s
            abandoned: threading.Event | None = getattr(self._abandoned, "event", None)

            def stop() -> bool:
                return time.monotonic() > deadline or (abandoned is not None and abandoned.is_set())

            conn.set_progress_handler(stop, PROGRESS_EVERY)
            try:
                return work(conn)
            except sqlite3.Error as exc:
                raise ValueError(self._explain(exc)) from None
            except sqlite3.Warning as exc:  # older Pythons report multiple statements this way
                raise ValueError(f"only one SQL statement per query is allowed ({exc})") from None

    def _explain(self, exc: sqlite3.Error) -> str:
        text = str(exc)
        if text == "interrupted":
            return f"the query ran longer than {self.time_limit_s:g} s and was stopped; make it cheaper"
        if "not authorized to use function" in text:
            return f"SQL error: {text}; only plain functions (text, math, date, JSON, aggregates) are allowed"
        if any(marker in text for marker in ("not authorized", "authorization denied", "readonly")):
            return f"{_READ_ONLY_HINT} ({text})"
        if "one statement at a time" in text:
            return "only one SQL statement per query is allowed"
        if "no such table" in text:
            return f"SQL error: {text}; call sql_list_tables to see the tables"
        return f"SQL error: {text}"

    def _connect(self) -> sqlite3.Connection:
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=1.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
            conn.set_authorizer(_authorize)
        except BaseException:
            conn.close()
            raise
        return conn

    def _ensure_built(self) -> None:
        if self._ready:
            return
        with self._lock:
            if not self._ready:
                self._build_if_needed()
                self._ready = True

    def _build_if_needed(self) -> None:
        if self.source is None:
            if not self.path.is_file():
                raise ValueError(f"database file {self.path} does not exist")
            return
        if self.path.exists() and not (
            self._built_by_us() and self.path.stat().st_mtime < self.source.stat().st_mtime
        ):
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".sample-", suffix=".db", dir=self.path.parent)
            os.close(fd)
            try:
                with closing(sqlite3.connect(tmp)) as conn:
                    conn.executescript(self.source.read_text(encoding="utf-8"))
                    conn.execute(f"PRAGMA application_id = {SAMPLE_APPLICATION_ID}")
                    conn.commit()
                os.replace(tmp, self.path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError as exc:
            raise ValueError(
                f"cannot build the sample database at {self.path} ({exc}); set AGENTLOOP_SQL_DATABASE "
                "to a writable path"
            ) from exc

    def _built_by_us(self) -> bool:
        try:
            with closing(sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
                (application_id,) = conn.execute("PRAGMA application_id").fetchone()
        except sqlite3.Error:
            return False
        return bool(application_id == SAMPLE_APPLICATION_ID)


def sql_tools(
    database: str | Path | None,
    row_limit: int,
    *,
    time_limit_s: float = QUERY_TIME_LIMIT_S,
    max_concurrent: int = MAX_CONCURRENT_QUERIES,
) -> list[Tool]:
    """The four SQL tools over ``database`` (the sample shop, built on first use, when empty).

    They are async tools that run their work on the database's own
    ``max_concurrent`` threads (see ReadOnlyDatabase.call), never on the pool
    the other synchronous tools share.
    """
    path = Path(database) if database else default_database_path()
    db = ReadOnlyDatabase(path, row_limit, time_limit_s=time_limit_s, max_concurrent=max_concurrent)

    @tool
    async def sql_list_tables() -> list[str]:
        """List the tables of the SQL database (a small shop: customers, products, orders...); start here."""
        return await db.call(db.list_tables)

    @tool(next_steps=DESCRIBE_NEXT_STEPS)
    async def sql_describe_table(table: str) -> dict[str, Any]:
        """Show a table's columns, types, foreign keys and row count; use it before writing a query.

        Args:
            table: A table name as returned by sql_list_tables.
        """
        return await db.call(db.describe_table, table)

    @tool(next_steps=VALIDATE_NEXT_STEPS)
    async def sql_validate(query: str) -> dict[str, Any]:
        """Check a SQL query (SQLite dialect) without running it; do this before sql_query.

        Returns {"valid": true, "columns": [...]} with the result's column names,
        or fails with the database's error (unknown table or column, syntax error,
        not a read-only SELECT).

        Args:
            query: A single SELECT statement.
        """
        return await db.call(db.validate, query)

    @tool(next_steps=QUERY_NEXT_STEPS)
    async def sql_query(query: str, limit: int = 50) -> dict[str, Any]:
        """Run one read-only SQL query (SQLite dialect) and get {"columns", "rows", "truncated"}.

        Only SELECT (and WITH ... SELECT) is allowed. Aggregate in SQL rather than
        fetching many rows; "truncated" is true when more rows matched than were returned.

        Args:
            query: A single SELECT statement.
            limit: The most rows to return; the server may cap it lower.
        """
        return await db.call(db.query, query, limit)

    return [Tool(fn) for fn in (sql_list_tables, sql_describe_table, sql_validate, sql_query)]
