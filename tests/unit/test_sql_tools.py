"""SQL tools: the sample shop database, row caps, and read-only by construction."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from agentloop.v1 import common_pb2
from tests.support.waiting import assert_eventually
from tool_svc import ToolRegistry
from tool_svc.builtins.calculator import calculator
from tool_svc.builtins.sql import SAMPLE_SQL, ReadOnlyDatabase, sql_tools
from tool_svc.executor import execute


@pytest.fixture
def db(tmp_path: Path) -> ReadOnlyDatabase:
    return ReadOnlyDatabase(tmp_path / "cache" / "shop.db", row_limit=5, time_limit_s=0.3)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sample_database_is_built_on_first_use(db: ReadOnlyDatabase) -> None:
    assert not db.path.exists()
    assert db.list_tables() == ["customers", "order_items", "orders", "products"]
    assert db.path.is_file()


def test_describe_table(db: ReadOnlyDatabase) -> None:
    described = db.describe_table("Orders")
    assert described["table"] == "orders"
    assert described["row_count"] == 30
    assert [column["name"] for column in described["columns"]] == [
        "id",
        "customer_id",
        "ordered_at",
        "status",
    ]
    assert described["columns"][0] == {
        "name": "id",
        "type": "INTEGER",
        "nullable": False,
        "primary_key": True,
    }
    assert described["foreign_keys"] == [{"column": "customer_id", "references": "customers.id"}]
    assert db.describe_table("customers")["row_count"] == 10
    assert db.describe_table("products")["row_count"] == 12


def test_describe_unknown_table_lists_the_tables(db: ReadOnlyDatabase) -> None:
    with pytest.raises(
        ValueError, match="unknown table 'users'; tables: customers, order_items, orders, products"
    ):
        db.describe_table("users")


def test_query_returns_columns_and_rows(db: ReadOnlyDatabase) -> None:
    result = db.query("SELECT id, name, country FROM customers WHERE id IN (1, 2) ORDER BY id", limit=50)
    assert result == {
        "columns": ["id", "name", "country"],
        "rows": [[1, "Alice Martin", "France"], [2, "Bruno Costa", "Brazil"]],
        "truncated": False,
    }


def test_query_supports_joins_aggregates_and_ctes(db: ReadOnlyDatabase) -> None:
    result = db.query(
        """
        WITH totals AS (
            SELECT o.customer_id, SUM(i.quantity * i.unit_price) AS total
            FROM orders o JOIN order_items i ON i.order_id = o.id
            GROUP BY o.customer_id
        )
        SELECT COUNT(*), ROUND(SUM(total), 2) > 0 FROM totals
        """,
        limit=50,
    )
    assert result["rows"][0][1] == 1
    assert 1 <= result["rows"][0][0] <= 10
    recursive = db.query(
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3) SELECT x FROM n", 10
    )
    assert recursive["rows"] == [[1], [2], [3]]


def test_limit_caps_rows_and_sets_truncated(db: ReadOnlyDatabase) -> None:
    three = db.query("SELECT id FROM products ORDER BY id", limit=3)
    assert three["rows"] == [[1], [2], [3]]
    assert three["truncated"] is True
    capped = db.query("SELECT id FROM products ORDER BY id", limit=1000)
    assert len(capped["rows"]) == 5  # the database's row_limit wins over the model's limit
    assert capped["truncated"] is True
    exact = db.query("SELECT id FROM products WHERE id <= 5", limit=5)
    assert len(exact["rows"]) == 5
    assert exact["truncated"] is False


def test_limit_must_be_positive(db: ReadOnlyDatabase) -> None:
    with pytest.raises(ValueError, match="limit must be >= 1"):
        db.query("SELECT 1", limit=0)


def test_blobs_come_back_as_hex(db: ReadOnlyDatabase) -> None:
    assert db.query("SELECT x'00ff'", limit=1)["rows"] == [["00ff"]]


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO customers (id, name, country, created_at) VALUES (99, 'Mallory', 'X', '2024-01-01')",
        "UPDATE products SET price = 0",
        "DELETE FROM orders",
        "DROP TABLE orders",
        "REPLACE INTO customers VALUES (1, 'Mallory', 'X', '2024-01-01')",
        "CREATE TABLE evil (x)",
        "CREATE TEMP TABLE scratch (x)",
        "CREATE VIEW v AS SELECT 1",
        "ALTER TABLE customers ADD COLUMN evil TEXT",
        "ATTACH DATABASE '/tmp/agentloop-evil.db' AS evil",
        "DETACH DATABASE main",
        "PRAGMA query_only = OFF",
        "PRAGMA journal_mode = WAL",
        "PRAGMA writable_schema = ON",
        "BEGIN",
        "SAVEPOINT sp",
        "VACUUM",
        "ANALYZE",
        "REINDEX",
        "WITH doomed AS (SELECT id FROM orders) DELETE FROM orders WHERE id IN (SELECT id FROM doomed)",
        "WITH x AS (SELECT 1) UPDATE products SET price = 0",
        "WITH x AS (SELECT 1) INSERT INTO customers SELECT 100, 'a', 'b', 'c' FROM x",
        "SELECT 1; DROP TABLE orders",
        "SELECT 1; DELETE FROM orders",
        "VACUUM INTO '/tmp/agentloop-evil.db'",
        "VACUUM INTO (SELECT '/tmp/agentloop-evil.db')",
        "PRAGMA table_info(orders)",
    ],
)
def test_writes_are_refused(db: ReadOnlyDatabase, statement: str) -> None:
    db.list_tables()
    before = digest(db.path)
    with pytest.raises(ValueError, match=r"read-only|only one SQL statement"):
        db.query(statement, limit=5)
    assert digest(db.path) == before
    assert db.describe_table("orders")["row_count"] == 30
    assert not Path("/tmp/agentloop-evil.db").exists()


def test_runaway_queries_are_stopped(db: ReadOnlyDatabase) -> None:
    endless = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
    with pytest.raises(ValueError, match=re.escape("ran longer than 0.3 s and was stopped")):
        db.query(endless, limit=1)


def test_huge_values_are_refused(db: ReadOnlyDatabase) -> None:
    with pytest.raises(ValueError, match="too big"):
        db.query("SELECT zeroblob(100000000)", limit=1)


def test_unknown_table_hints_at_listing(db: ReadOnlyDatabase) -> None:
    with pytest.raises(ValueError, match="no such table: users; call sql_list_tables"):
        db.query("SELECT * FROM users", limit=1)


def test_a_database_we_did_not_build_is_used_as_is(tmp_path: Path) -> None:
    path = tmp_path / "mine.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('keep me')")
        conn.commit()
    os.utime(path, (0, 0))  # older than the sample script, yet never replaced
    db = ReadOnlyDatabase(path, row_limit=10)
    assert db.list_tables() == ["notes"]
    assert db.query("SELECT body FROM notes", 10)["rows"] == [["keep me"]]
    with pytest.raises(ValueError, match="read-only"):
        db.query("DELETE FROM notes", 10)


def test_sample_is_rebuilt_when_the_script_is_newer(tmp_path: Path) -> None:
    source = tmp_path / "sample.sql"
    source.write_text(SAMPLE_SQL.read_text(encoding="utf-8"), encoding="utf-8")
    path = tmp_path / "sample.db"
    ReadOnlyDatabase(path, row_limit=5, source=source).list_tables()
    os.utime(path, (0, 0))
    source.write_text("CREATE TABLE fresh (x INTEGER);\n", encoding="utf-8")
    assert ReadOnlyDatabase(path, row_limit=5, source=source).list_tables() == ["fresh"]


def test_missing_database_without_source_is_an_error(tmp_path: Path) -> None:
    db = ReadOnlyDatabase(tmp_path / "absent.db", row_limit=5, source=None)
    with pytest.raises(ValueError, match="does not exist"):
        db.list_tables()


async def test_tools_through_the_executor(tmp_path: Path) -> None:
    registry = ToolRegistry(sql_tools(tmp_path / "shop.db", row_limit=2))
    assert registry.names() == ("sql_describe_table", "sql_list_tables", "sql_query", "sql_validate")
    ordered_ids = "SELECT id FROM orders ORDER BY id"
    calls = [
        common_pb2.ToolCall(id="1", name="sql_list_tables"),
        common_pb2.ToolCall(id="2", name="sql_describe_table", arguments_json='{"table": "products"}'),
        common_pb2.ToolCall(id="3", name="sql_query", arguments_json=json.dumps({"query": ordered_ids})),
        common_pb2.ToolCall(id="4", name="sql_query", arguments_json='{"query": "DELETE FROM orders"}'),
    ]
    results = {
        event.tool_call_id: event
        async for event in execute(registry, calls, timeout_s=10, max_concurrency=4)
        if isinstance(event, common_pb2.ToolResult)
    }
    assert json.loads(results["1"].content) == ["customers", "order_items", "orders", "products"]
    assert json.loads(results["2"].content)["row_count"] == 12
    assert json.loads(results["3"].content) == {"columns": ["id"], "rows": [[1], [2]], "truncated": True}
    assert results["4"].is_error
    assert results["4"].error_kind == common_pb2.TOOL_ERROR_KIND_EXCEPTION
    assert results["4"].content.startswith("ValueError: the database is read-only")


def test_validate_accepts_a_select_and_names_its_columns(db: ReadOnlyDatabase) -> None:
    assert db.validate("SELECT id, name FROM customers") == {"valid": True, "columns": ["id", "name"]}
    joined = (
        "SELECT c.id, o.id, count(*) AS n FROM customers c JOIN orders o ON o.customer_id = c.id "
        "GROUP BY c.id, o.id;"
    )
    # Repeated names come back as sql_query returns them (SQLite's subqueries would say "id:1").
    assert db.validate(joined) == {"valid": True, "columns": ["id", "id", "n"]}
    assert db.validate("WITH x AS (SELECT 1 AS a) SELECT a FROM x")["columns"] == ["a"]


def test_validate_does_not_run_the_query(db: ReadOnlyDatabase) -> None:
    # query() stops this after 0.3 s; validating it only compiles and plans it.
    endless = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) AS c FROM n"
    assert db.validate(endless) == {"valid": True, "columns": ["c"]}


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("SELECT nope FROM customers", "SQL error: no such column: nope"),
        ("SELECT * FROM users", "no such table: users; call sql_list_tables"),
        ("SELEC id FROM customers", 'SQL error: near "SELEC": syntax error'),
        ("DELETE FROM orders", "the database is read-only"),
        ("INSERT INTO customers (id, name) VALUES (99, 'x')", "the database is read-only"),
        ("WITH gone AS (SELECT 1) DELETE FROM orders", "the database is read-only"),
        ("DROP TABLE orders", "the database is read-only"),
        ("SELECT 1; DROP TABLE orders", "only one SQL statement per query is allowed"),
        ("   ", "query is empty"),
    ],
)
def test_validate_reports_invalid_queries(db: ReadOnlyDatabase, query: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        db.validate(query)
    assert db.describe_table("orders")["row_count"] == 30


@pytest.mark.parametrize(
    "statement",
    [
        "VACUUM",
        "VACUUM INTO '/tmp/agentloop-evil.db'",
        "VACUUM INTO (SELECT '/tmp/agentloop-evil.db')",
        "PRAGMA table_info(orders)",
    ],
)
def test_validate_refuses_what_is_not_a_select(db: ReadOnlyDatabase, statement: str) -> None:
    # SQLite asks the authorizer nothing about VACUUM until it runs, so compiling it alone passed.
    with pytest.raises(ValueError, match=re.escape("read-only: only SELECT queries")):
        db.validate(statement)
    assert not Path("/tmp/agentloop-evil.db").exists()


@pytest.mark.parametrize(
    "call",
    [
        "fts3_tokenizer('simple')",
        "fts3_tokenizer('evil', x'0000000000000000')",
        "load_extension('/tmp/evil.so')",
        "sqlite_compileoption_get(0)",
        "sqlite_version()",
    ],
)
def test_only_plain_functions_may_be_called(db: ReadOnlyDatabase, call: str) -> None:
    name = call.split("(")[0]
    for check in (db.validate, lambda sql: db.query(sql, limit=1)):
        with pytest.raises(ValueError, match=re.escape(f"not authorized to use function: {name}")):
            check(f"SELECT {call}")


def test_plain_functions_work(db: ReadOnlyDatabase) -> None:
    sql = (
        "SELECT upper(substr(name, 1, 3)) AS s, round(avg(price), 1) AS p, count(*) AS n, "
        "json_object('a', 1) ->> 'a' AS j, date('2024-01-31', '+1 day') AS d, "
        "row_number() OVER (ORDER BY name) AS r FROM products GROUP BY name ORDER BY name LIMIT 1"
    )
    assert db.query(sql, limit=1)["columns"] == ["s", "p", "n", "j", "d", "r"]
    assert db.query("SELECT abs(-2), coalesce(NULL, 3), max(1, 4), printf('%d', 5)", limit=1)["rows"] == [
        [2, 3, 4, "5"]
    ]


def test_sql_tools_publish_the_text_to_sql_flow(tmp_path: Path) -> None:
    registry = ToolRegistry(sql_tools(tmp_path / "shop.db", row_limit=2))

    def rules(name: str) -> dict[str, str]:
        spec = registry.specs([name])[0]
        return {on(rule): rule.next_step for rule in spec.next_steps}

    assert rules("sql_describe_table") == {"success": "write_sql"}
    assert rules("sql_validate") == {"success": "run_sql", "error": "analyze_validation_error"}
    assert rules("sql_query") == {"success": "summarize_final_answer", "error": "analyze_error"}
    assert rules("sql_list_tables") == {}
    validate_hints = {on(rule): rule.hint for rule in registry.specs(["sql_validate"])[0].next_steps}
    assert "sql_query" in validate_hints["success"]
    assert "sql_validate" in validate_hints["error"]
    assert not any(spec.requires_approval or spec.injected_parameters for spec in registry.specs())


def on(rule: common_pb2.NextStepRule) -> str:
    """The rule's trigger as the tool author wrote it ("success" / "error")."""
    return common_pb2.NextStepTrigger.Name(rule.trigger).removeprefix("NEXT_STEP_TRIGGER_").lower()


async def test_sql_validate_through_the_executor(tmp_path: Path) -> None:
    registry = ToolRegistry(sql_tools(tmp_path / "shop.db", row_limit=2))
    calls = [
        common_pb2.ToolCall(
            id="ok", name="sql_validate", arguments_json='{"query": "SELECT name FROM products"}'
        ),
        common_pb2.ToolCall(
            id="bad", name="sql_validate", arguments_json='{"query": "SELECT nme FROM products"}'
        ),
        common_pb2.ToolCall(
            id="write", name="sql_validate", arguments_json='{"query": "DELETE FROM orders"}'
        ),
    ]
    results = {
        event.tool_call_id: event
        async for event in execute(registry, calls, timeout_s=10, max_concurrency=4)
        if isinstance(event, common_pb2.ToolResult)
    }
    assert json.loads(results["ok"].content) == {"valid": True, "columns": ["name"]}
    assert not results["ok"].is_error
    assert results["bad"].error_kind == common_pb2.TOOL_ERROR_KIND_EXCEPTION
    assert results["bad"].content == "ValueError: SQL error: no such column: nme"
    assert results["write"].content.startswith("ValueError: the database is read-only")


ENDLESS = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"


async def test_runaway_queries_leave_the_other_tools_their_threads(tmp_path: Path) -> None:
    registry = ToolRegistry([calculator, *sql_tools(tmp_path / "shop.db", row_limit=2, time_limit_s=0.5)])
    # More queries than the default thread pool, which every synchronous tool shares, has threads.
    runaway = [
        common_pb2.ToolCall(id=f"q{i}", name="sql_query", arguments_json=json.dumps({"query": ENDLESS}))
        for i in range(min(32, (os.cpu_count() or 1) + 4) + 4)
    ]
    finished: list[common_pb2.ToolResult] = []
    sql_started = asyncio.Event()

    async def batch(calls: list[common_pb2.ToolCall], timeout_s: float) -> None:
        async for event in execute(registry, calls, timeout_s=timeout_s, max_concurrency=len(calls)):
            if isinstance(event, common_pb2.ToolResult):
                finished.append(event)
            else:
                sql_started.set()

    queries = asyncio.create_task(batch(runaway, timeout_s=1.0))
    await sql_started.wait()
    sum_call = common_pb2.ToolCall(id="calc", name="calculator", arguments_json='{"expression": "2 + 3"}')
    await batch([sum_call], timeout_s=10)
    await queries

    ids = [result.tool_call_id for result in finished]
    assert ids[0] == "calc", ids
    assert finished[0].content == "5"
    # Every runaway query ended: stopped at its time limit, or timed out waiting for an SQL thread.
    for result in finished[1:]:
        assert result.is_error
        if result.error_kind == common_pb2.TOOL_ERROR_KIND_EXCEPTION:
            assert "ran longer than 0.5 s and was stopped" in result.content
        else:
            assert result.error_kind == common_pb2.TOOL_ERROR_KIND_TIMEOUT
    assert len(finished) == len(runaway) + 1


async def test_fts3_tokenizer_through_the_executor_is_an_error_result(tmp_path: Path) -> None:
    registry = ToolRegistry(sql_tools(tmp_path / "shop.db", row_limit=2))
    calls = [
        common_pb2.ToolCall(
            id=name, name=name, arguments_json=json.dumps({"query": "SELECT hex(fts3_tokenizer('simple'))"})
        )
        for name in ("sql_query", "sql_validate")
    ]
    results = [
        event
        async for event in execute(registry, calls, timeout_s=10, max_concurrency=2)
        if isinstance(event, common_pb2.ToolResult)
    ]
    assert len(results) == 2
    for result in results:
        assert result.is_error
        assert result.content.startswith(
            "ValueError: SQL error: not authorized to use function: fts3_tokenizer"
        )


async def test_a_call_cancelled_mid_query_frees_its_thread_at_once(tmp_path: Path) -> None:
    # One SQL thread, and a time limit no test would wait for: only the interruption can free it.
    db = ReadOnlyDatabase(tmp_path / "shop.db", row_limit=5, time_limit_s=600, max_concurrent=1)
    started = threading.Event()

    def endless() -> dict[str, object]:
        started.set()
        return db.query(ENDLESS, limit=1)

    runaway = asyncio.create_task(db.call(endless))
    await assert_eventually(started.is_set, timeout_s=30, message="the query did not start")
    runaway.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runaway
    # Without the interruption this waits for the endless query (10 minutes); wait_for only stops a hang.
    after = await asyncio.wait_for(db.call(db.query, "SELECT 1 AS one", 1), 60)
    assert after["rows"] == [[1]]
