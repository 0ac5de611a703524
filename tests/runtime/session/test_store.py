"""The store conformance suite, run on SQLite and PostgreSQL: append-only by the database (UPDATE, DELETE and any
insert that is not the session's next seq are refused to any client), reopening, fork by reference and its
refusals, listing and children, and the one-writer lease."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dsh.runtime.session import (
    InvalidBoundaryError,
    LeaseLostError,
    OpenTurnError,
    SessionExistsError,
    SessionId,
    SessionInUseError,
    SessionNotFoundError,
    SessionStoreProtocol,
    SpawnedBy,
    StoredEvent,
    import_jsonl,
    project,
)
from dsh.runtime.session.store._rows import event_row

from .backends import INTEGRITY_ERRORS, Backend
from .conftest import HARNESS, snapshot_rows


def _imported(store: SessionStoreProtocol, scenario: str = "multi-turn") -> str:
    return import_jsonl(store, HARNESS / scenario / "session.jsonl").id


@pytest.mark.parametrize("statement", ["UPDATE events SET data = '{}'", "DELETE FROM events"])
def test_events_refuse_update_and_delete(
    store: SessionStoreProtocol, backend: Backend, statement: str
) -> None:
    session = _imported(store)
    before = snapshot_rows(backend)
    with backend.raw() as conn, pytest.raises(INTEGRITY_ERRORS, match="append-only"):
        conn.execute(statement + " WHERE session_id = ?", (session,))
    assert snapshot_rows(backend) == before


_INSERT = "INSERT INTO events (session_id, seq, type, time, data) VALUES (?, ?, 'x/y', 1, '{}')"


@pytest.mark.parametrize("seq", [-1, 3, 10])
def test_an_insert_that_is_not_the_next_seq_is_refused_by_the_database(
    store: SessionStoreProtocol, backend: Backend, seq: int
) -> None:
    session = store.create()
    store.append_events(session.id, [StoredEvent(type="x/y", seq=n, time=1, data="{}") for n in range(2)])
    before = snapshot_rows(backend)
    with backend.raw() as conn, pytest.raises(INTEGRITY_ERRORS):
        conn.execute(_INSERT, (session.id, seq))
    assert snapshot_rows(backend) == before
    with backend.raw() as conn:
        conn.execute(_INSERT, (session.id, 2))  # the next seq is accepted from any client
    assert store.length(session.id) == 3


def test_a_fork_child_appends_from_its_seed_length(store: SessionStoreProtocol, backend: Backend) -> None:
    parent = _imported(store)
    child = store.fork(parent)
    seed = child.seed_length or 0
    with backend.raw() as conn:
        with pytest.raises(INTEGRITY_ERRORS):
            conn.execute(_INSERT, (child.id, 0))
        conn.execute(_INSERT, (child.id, seed))
    assert store.length(child.id) == seed + 1


@pytest.mark.parametrize(
    "statement",
    ["UPDATE sessions SET cwd = '/forged' WHERE id = ?", "DELETE FROM sessions WHERE id = ?"],
)
def test_session_rows_are_never_rewritten_or_deleted_by_any_client(
    store: SessionStoreProtocol, backend: Backend, statement: str
) -> None:
    session = store.create(cwd="/w").id
    before = snapshot_rows(backend)
    with backend.raw() as conn, pytest.raises(INTEGRITY_ERRORS, match="sessions are"):
        conn.execute(statement, (session,))
    assert snapshot_rows(backend) == before


def test_a_lease_lost_with_its_connection_refuses_the_holders_writes(store: SessionStoreProtocol) -> None:
    session = store.create()
    lease = store.acquire_lease(session.id)
    store.release_lease(lease)  # gone, as if taken over and given back by another writer meanwhile
    conn = store.connect()
    try:
        with pytest.raises(LeaseLostError):
            store.insert_rows(
                conn, [event_row(session.id, StoredEvent(type="x/y", seq=0, time=1, data="{}"))], lease=lease
            )
    finally:
        conn.close()
    assert store.length(session.id) == 0


def test_reopening_keeps_everything(store: SessionStoreProtocol, backend: Backend) -> None:
    session = _imported(store)
    child = store.fork(session)
    events = list(store.events(session))
    with backend.open() as second:
        assert list(second.events(session)) == events
        assert second.info(child.id) == child
        assert second.schema_version() == store.schema_version() >= 1


def test_a_second_writer_from_another_store_client_is_refused_naming_the_holder(
    store: SessionStoreProtocol, backend: Backend
) -> None:
    import os
    import socket

    session = store.create()
    first = store.acquire_lease(session.id)
    try:
        with backend.open() as other, pytest.raises(SessionInUseError) as refused:
            other.acquire_lease(session.id)
        error = refused.value
        assert (error.session_id, error.pid, error.host) == (session.id, os.getpid(), socket.gethostname())
        assert abs((datetime.now(UTC) - error.since).total_seconds()) < 60
        when = error.since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert str(error) == f"session {session.id} is in use by pid {error.pid} on {error.host} since {when}"
        holder = store.lease_holder(session.id)
        assert holder is not None
        assert (holder.pid, holder.token) == (first.pid, first.token)
    finally:
        store.release_lease(first)
    assert store.lease_holder(session.id) is None
    with backend.open() as other:
        other.release_lease(other.acquire_lease(session.id))  # released: the next writer takes it


def test_fork_copies_no_events_and_reads_the_parent_prefix(
    store: SessionStoreProtocol, backend: Backend
) -> None:
    parent = _imported(store)
    parent_events = list(store.events(parent))
    turn_end = next(e.seq for e in parent_events if e.type == "turn/end")
    rows_before = len(snapshot_rows(backend)[1])
    child = store.fork(parent, at=turn_end)
    assert len(snapshot_rows(backend)[1]) == rows_before
    assert (child.parent_id, child.seed_length, child.inherits) == (parent, turn_end + 1, True)
    assert list(store.events(child.id)) == parent_events[: turn_end + 1]
    assert store.length(child.id) == turn_end + 1
    assert project(store.events(child.id)) == project(parent_events[: turn_end + 1])


def test_a_fork_of_a_fork_continues_its_own_seqs(store: SessionStoreProtocol, backend: Backend) -> None:
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


def test_fork_refusals_have_their_codes(store: SessionStoreProtocol, backend: Backend) -> None:
    parent = _imported(store)
    events = list(store.events(parent))
    turn_start = next(e.seq for e in events if e.type == "turn/start")
    before = snapshot_rows(backend)
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
    assert snapshot_rows(backend) == before
    # before the first turn/start (log-only events between turns) is a valid boundary
    assert store.fork(parent, at=turn_start - 1).seed_length == turn_start


def test_fork_of_an_empty_session_and_by_default_at_the_end(
    store: SessionStoreProtocol, backend: Backend
) -> None:
    empty = store.create(cwd="/w")
    assert store.length(store.fork(empty.id).id) == 0
    parent = _imported(store)
    child = store.fork(parent)
    assert child.seed_length == store.length(parent)
    assert child.cwd == "{{cwd}}"


def test_a_duplicate_seq_is_refused_by_the_primary_key(store: SessionStoreProtocol, backend: Backend) -> None:
    session = store.create()
    event = StoredEvent(type="x/y", seq=0, time=1, data="{}")
    store.append_events(session.id, [event])
    conn = store.connect()
    try:
        with pytest.raises(INTEGRITY_ERRORS):
            store.insert_rows(conn, [event_row(session.id, event)])
    finally:
        conn.close()
    assert list(store.events(session.id)) == [event]


def test_sessions_lists_in_creation_order(store: SessionStoreProtocol, backend: Backend) -> None:
    first = store.create(cwd="/a")
    second = store.create(cwd="/b")
    assert [s.id for s in store.sessions()] == [first.id, second.id]
    assert store.info(second.id).cwd == "/b"


def test_a_delegated_fork_carries_its_depth_and_the_call_that_spawned_it(
    store: SessionStoreProtocol, backend: Backend
) -> None:
    parent = _imported(store)
    end = next(e.seq for e in store.events(parent) if e.type == "turn/end")
    rows_before = len(snapshot_rows(backend)[1])
    spawned = SpawnedBy(turn=2, step=1, call_id="call-1")
    child = store.fork(parent, at=end, delegation_depth=1, spawned_by=spawned)
    assert len(snapshot_rows(backend)[1]) == rows_before
    assert store.info(child.id) == child
    assert (child.parent_id, child.seed_length, child.delegation_depth, child.spawned_by) == (
        parent,
        end + 1,
        1,
        spawned,
    )
    plain = store.fork(parent, at=end)
    assert (plain.delegation_depth, plain.spawned_by) == (0, None)


def test_children_are_the_sessions_naming_a_parent_oldest_first(
    store: SessionStoreProtocol, backend: Backend
) -> None:
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
