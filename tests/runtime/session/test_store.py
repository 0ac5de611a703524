"""The SQLite store: schema and migrations, append-only triggers, fork by reference and its refusals."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from runtime.session import (
    SCHEMA_VERSION,
    InvalidBoundaryError,
    OpenTurnError,
    SessionExistsError,
    SessionId,
    SessionNotFoundError,
    SessionStore,
    SpawnedBy,
    StoredEvent,
    StoreSchemaError,
    import_jsonl,
    project,
)
from runtime.session._store import event_row

from .conftest import HARNESS, snapshot_rows


def _imported(store: SessionStore, scenario: str = "multi-turn") -> str:
    return import_jsonl(store, HARNESS / scenario / "session.jsonl").id


def test_schema_tables_wal_and_version(store: SessionStore) -> None:
    conn = store.connect()
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
    assert store.schema_version() == SCHEMA_VERSION
    conn.close()


@pytest.mark.parametrize("statement", ["UPDATE events SET data = '{}'", "DELETE FROM events"])
def test_events_refuse_update_and_delete(store: SessionStore, statement: str) -> None:
    session = _imported(store)
    before = snapshot_rows(store)
    conn = store.connect()
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute(statement + " WHERE session_id = ?", (session,))
    conn.close()
    assert snapshot_rows(store) == before


def test_reopening_keeps_everything_and_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SessionStore(path) as first:
        session = _imported(first)
        events = list(first.events(session))
    with SessionStore(path) as second:
        assert list(second.events(session)) == events
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


def test_fork_copies_no_events_and_reads_the_parent_prefix(store: SessionStore) -> None:
    parent = _imported(store)
    parent_events = list(store.events(parent))
    turn_end = next(e.seq for e in parent_events if e.type == "turn/end")
    rows_before = len(snapshot_rows(store)[1])
    child = store.fork(parent, at=turn_end)
    assert len(snapshot_rows(store)[1]) == rows_before
    assert (child.parent_id, child.seed_length, child.inherits) == (parent, turn_end + 1, True)
    assert list(store.events(child.id)) == parent_events[: turn_end + 1]
    assert store.length(child.id) == turn_end + 1
    assert project(store.events(child.id)) == project(parent_events[: turn_end + 1])


def test_a_fork_of_a_fork_continues_its_own_seqs(store: SessionStore) -> None:
    parent = _imported(store)
    events = list(store.events(parent))
    ends = [e.seq for e in events if e.type == "turn/end"]
    child = store.fork(parent, at=ends[-1])
    own = StoredEvent(type="plugin/note", seq=ends[-1] + 1, time=7, data='{"n":1}')
    store.append_events(child.id, [own])
    grandchild = store.fork(child.id, at=own.seq)
    assert list(store.events(grandchild.id)) == [*events[: ends[-1] + 1], own]
    earlier = store.fork(grandchild.id, at=ends[0])
    assert list(store.events(earlier.id)) == events[: ends[0] + 1]
    assert list(store.events(parent)) == events  # the parent never sees the child's events


def test_fork_refusals_have_their_codes(store: SessionStore) -> None:
    parent = _imported(store)
    events = list(store.events(parent))
    turn_start = next(e.seq for e in events if e.type == "turn/start")
    before = snapshot_rows(store)
    with pytest.raises(OpenTurnError) as open_turn:
        store.fork(parent, at=turn_start + 2)
    assert open_turn.value.code == "OPEN_TURN"
    assert open_turn.value.turn_start_seq == turn_start
    with pytest.raises(InvalidBoundaryError) as boundary:
        store.fork(parent, at=len(events))
    assert boundary.value.code == "INVALID_BOUNDARY"
    with pytest.raises(InvalidBoundaryError):
        store.fork(parent, at=-1)
    with pytest.raises(SessionNotFoundError) as missing:
        store.fork("nope")
    assert missing.value.code == "SESSION_NOT_FOUND"
    with pytest.raises(SessionExistsError) as taken:
        store.fork(parent, child_id=SessionId(parent))
    assert taken.value.code == "SESSION_ALREADY_EXISTS"
    assert snapshot_rows(store) == before
    # before the first turn/start (log-only events between turns) is a valid boundary
    assert store.fork(parent, at=turn_start - 1).seed_length == turn_start


def test_fork_of_an_empty_session_and_by_default_at_the_end(store: SessionStore) -> None:
    empty = store.create(cwd="/w")
    assert store.length(store.fork(empty.id).id) == 0
    parent = _imported(store)
    child = store.fork(parent)
    assert child.seed_length == store.length(parent)
    assert child.cwd == "{{cwd}}"


def test_a_duplicate_seq_is_refused_by_the_primary_key(store: SessionStore) -> None:
    session = store.create()
    event = StoredEvent(type="x/y", seq=0, time=1, data="{}")
    store.append_events(session.id, [event])
    conn = store.connect()
    with pytest.raises(sqlite3.IntegrityError):
        store.insert_rows(conn, [event_row(session.id, event)])
    conn.close()
    assert list(store.events(session.id)) == [event]


def test_sessions_lists_in_creation_order(store: SessionStore) -> None:
    first = store.create(cwd="/a")
    second = store.create(cwd="/b")
    assert [s.id for s in store.sessions()] == [first.id, second.id]
    assert store.info(second.id).cwd == "/b"


def test_a_delegated_fork_carries_its_depth_and_the_call_that_spawned_it(store: SessionStore) -> None:
    parent = _imported(store)
    end = next(e.seq for e in store.events(parent) if e.type == "turn/end")
    rows_before = len(snapshot_rows(store)[1])
    spawned = SpawnedBy(turn=2, step=1, call_id="call-1")
    child = store.fork(parent, at=end, delegation_depth=1, spawned_by=spawned)
    assert len(snapshot_rows(store)[1]) == rows_before
    assert store.info(child.id) == child
    assert (child.parent_id, child.seed_length, child.delegation_depth, child.spawned_by) == (
        parent,
        end + 1,
        1,
        spawned,
    )
    plain = store.fork(parent, at=end)
    assert (plain.delegation_depth, plain.spawned_by) == (0, None)


def test_children_are_the_sessions_naming_a_parent_oldest_first(store: SessionStore) -> None:
    parent = store.create(cwd="/w")
    spawned = store.create(parent_id=parent.id, delegation_depth=1)
    forked = store.fork(parent.id)
    store.create()
    assert [c.id for c in store.children(parent.id)] == [spawned.id, forked.id]
    assert store.children(spawned.id) == []
    # an imported pair: the child names its parent by the id the parent had in its file
    imported = import_jsonl(store, HARNESS / "subagent-fork-in-process" / "session.jsonl")
    child = import_jsonl(store, HARNESS / "subagent-fork-in-process" / "session.1.jsonl")
    assert [c.id for c in store.children(imported.id)] == [child.id]
    with pytest.raises(SessionNotFoundError):
        store.children("nope")
