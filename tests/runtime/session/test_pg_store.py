"""What only the PostgreSQL store has: its tables and columns are SQLite's, its schema version lives in
`dsh_schema`, TRUNCATE is refused too, a schema that is not a dsh store, or is newer, is refused on open, and a gap
left by a client that disabled the triggers is named on read, as on SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from dsh.runtime.session import (
    LogGapError,
    SessionStore,
    StoreConnectError,
    StoredEvent,
    StoreSchemaError,
    open_store,
)
from dsh.runtime.session._pg import PG_SCHEMA_VERSION
from tests.pg_server import PgServer


def _columns_pg(url: str, table: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = %s ORDER BY ordinal_position",
            (table,),
        ).fetchall()
    return [row[0] for row in rows]


def test_the_tables_and_columns_are_sqlites(pg_url: str, tmp_path: Path) -> None:
    open_store(pg_url).close()
    SessionStore(tmp_path / "s.db").close()
    lite = sqlite3.connect(tmp_path / "s.db")
    try:
        for table in ("sessions", "events"):
            assert _columns_pg(pg_url, table) == [
                row[1] for row in lite.execute(f"PRAGMA table_info({table})")
            ]
    finally:
        lite.close()


def test_truncate_is_refused(pg_url: str) -> None:
    with open_store(pg_url) as store:
        store.create()
    with (
        psycopg.connect(pg_url, autocommit=True) as conn,
        pytest.raises(psycopg.IntegrityError, match="TRUNCATE"),
    ):
        conn.execute("TRUNCATE events")


def test_a_newer_schema_and_a_foreign_events_table_are_refused(pg_server: PgServer) -> None:
    newer = pg_server.new_schema()
    with open_store(newer) as store:
        assert store.schema_version() == PG_SCHEMA_VERSION
    with psycopg.connect(newer, autocommit=True) as conn:
        conn.execute("UPDATE dsh_schema SET version = version + 1")
    with pytest.raises(StoreSchemaError, match="newer"):
        open_store(newer)
    foreign = pg_server.new_schema()
    with psycopg.connect(foreign, autocommit=True) as conn:
        conn.execute("CREATE TABLE events (id int)")
    with pytest.raises(StoreSchemaError, match="not a dsh store"):
        open_store(foreign)


def test_a_missing_schema_and_an_unreachable_server_say_so_without_the_password(pg_server: PgServer) -> None:
    with pytest.raises(StoreSchemaError, match="names no existing schema"):
        open_store(pg_server.url("nowhere"))
    with pytest.raises(StoreConnectError) as refused:
        open_store(f"postgresql://dsh:s3cret@127.0.0.1:{pg_server.port}/missing_db")
    assert "s3cret" not in str(refused.value)
    assert refused.value.location == f"postgresql://dsh@127.0.0.1:{pg_server.port}/missing_db"


def test_a_gap_left_by_a_client_that_disabled_the_triggers_is_named_on_read(pg_url: str) -> None:
    with open_store(pg_url) as store:
        session = store.create().id
        store.append_events(session, [StoredEvent(type="x/y", seq=n, time=1, data="{}") for n in range(3)])
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ALTER TABLE events DISABLE TRIGGER events_after_insert")
            conn.execute(
                "INSERT INTO events (session_id, seq, type, time, data) VALUES (%s, 7, 'x/y', 1, '{}')",
                (session,),
            )
        with pytest.raises(LogGapError) as gap:
            list(store.events(session))
        assert (gap.value.after, gap.value.next) == (2, 7)
