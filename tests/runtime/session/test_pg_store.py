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
    StoreError,
    StoreRowError,
    StoreSchemaError,
    open_store,
    redact_url,
)
from dsh.runtime.session.store.pg import PG_SCHEMA_VERSION, PgStore
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


def test_a_restarted_server_is_reconnected_and_one_that_stays_down_is_reported_lost() -> None:
    server = PgServer()  # its own: restarting the shared one would fail every other test's connections
    try:
        url = server.new_schema()
        with PgStore(url, reconnect_for=3.0, connect_timeout=2.0) as store:
            session = store.create().id
            store.append_events(session, [StoredEvent(type="x/y", seq=0, time=0, data="{}")])
            server.stop_for_now()
            server.start()  # the pool's connections died with the old server: the next read gets new ones
            assert [info.id for info in store.sessions()] == [session]
            assert [event.seq for event in store.events(session)] == [0]
            server.stop_for_now()
            with pytest.raises(StoreError) as raised:
                store.sessions()
            assert raised.value.problem == "lost"
            assert str(raised.value).startswith(
                f"session store {redact_url(url)}: the connection to its server"
            )
            server.start()
            assert store.length(session) == 1
    finally:
        server.stop()


def test_a_row_dsh_would_not_write_is_refused_by_the_server(pg_url: str) -> None:
    with PgStore(pg_url) as store:
        session = store.create().id
        store.append_events(session, [StoredEvent(type="x/y", seq=0, time=0, data="{}")])
        insert = (
            "INSERT INTO events (session_id, seq, type, time, data, surface_op, source_event_seqs) "
            "VALUES (%s, 1, 'user/message', 0, %s, %s, %s)"
        )
        with psycopg.connect(pg_url, autocommit=True) as conn:
            for data, op, seqs in (
                ("{}", "bogus", None),
                ("{not json", None, None),
                ("{}", '{"op":"replace"}', None),
                ("{}", None, '{"a":1}'),
            ):
                with pytest.raises((psycopg.errors.DataError, psycopg.errors.CheckViolation)):
                    conn.execute(insert, (session, data, op, seqs))
            conn.execute(insert, (session, "{}", '{"op":"replace","start":0,"end":0}', "[0]"))
            conn.execute("ALTER TABLE events DROP CONSTRAINT events_valid")
            conn.execute(insert.replace("1, 'user", "2, 'user"), (session, "{}", "bogus", None))
        with pytest.raises(StoreRowError, match="event seq 2 is not a row dsh writes"):
            list(store.events(session))
