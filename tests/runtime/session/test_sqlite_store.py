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


def test_a_new_store_is_its_owners_only_and_an_existing_one_keeps_its_mode(tmp_path: Path) -> None:
    """The sessions hold what the user and the model said: a store dsh creates is 0600 (its WAL too); a file the
    user made keeps the mode they gave it."""
    import stat

    with SessionStore(tmp_path / "new.db") as store:
        store.create(cwd=str(tmp_path))
        made = [tmp_path / "new.db", *tmp_path.glob("new.db-wal")]
        assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in made} == {p.name: 0o600 for p in made}
    shared = tmp_path / "shared.db"
    shared.touch(mode=0o640)
    shared.chmod(0o640)
    with SessionStore(shared):
        pass
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640
