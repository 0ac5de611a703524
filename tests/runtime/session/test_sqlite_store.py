"""What only the SQLite store has: its file's pragmas (WAL), `PRAGMA user_version` as the schema version, and the
migration of an empty file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dsh.runtime.session import SCHEMA_VERSION, SessionStore, StoreSchemaError, import_jsonl

from .conftest import HARNESS


def test_schema_tables_wal_and_version(sqlite_store: SessionStore) -> None:
    conn = sqlite_store.connect()
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"sessions", "events"} <= tables
    columns = [row[1] for row in conn.execute("PRAGMA table_info(events)")]
    assert columns[:8] == [
        "session_id",
        "seq",
        "type",
        "time",
        "data",
        "surface_op",
        "source_event_seqs",
        "ignorable",
    ]
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert sqlite_store.schema_version() == SCHEMA_VERSION
    conn.close()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SessionStore(path) as first:
        import_jsonl(first, HARNESS / "multi-turn" / "session.jsonl")
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreSchemaError, match="newer"):
        SessionStore(path)


def test_an_old_store_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()  # schema version 0: nothing yet
    with SessionStore(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.sessions() == []
