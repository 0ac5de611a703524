"""The log defends itself against any SQLite client: through a plain `sqlite3` connection, REPLACE over an event,
a gap, an event of no session, and rewriting or deleting a session are refused by the schema; a log with a gap (from
a client that dropped the triggers, or a store older than them) is an error naming the gap; so is a row dsh would
not write (a bogus surface_op, non-JSON data), which the schema refuses too; an old store migrates."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlite_utils

from dsh.runtime.session import SCHEMA_VERSION, LogGapError, SessionStore, StoredEvent, StoreRowError
from dsh.runtime.session.store._rows import event_row
from dsh.runtime.session.store.sqlite import _INSERT, _migrate_1, _migrate_2

from .conftest import snapshot_rows


@pytest.fixture
def store(sqlite_store: SessionStore) -> SessionStore:
    """The SQLite store: these tests are of its own file."""
    return sqlite_store


def _event(seq: int, kind: str = "x/y") -> StoredEvent:
    return StoredEvent(type=kind, seq=seq, time=seq, data="{}")


@pytest.fixture
def raw(store: SessionStore) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection to the store's file, as any client would open it (autocommit)."""
    conn = sqlite3.connect(store.path, isolation_level=None)
    yield conn
    conn.close()


def _row(session: str, seq: int) -> tuple[object, ...]:
    return event_row(session, _event(seq))


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT OR REPLACE INTO events (session_id, seq, type, time, data) VALUES (?, 1, 'forged', 0, '{}')",
        "REPLACE INTO events (session_id, seq, type, time, data) VALUES (?, 0, 'forged', 0, '{}')",
        "INSERT OR IGNORE INTO events (session_id, seq, type, time, data) VALUES (?, 2, 'forged', 0, '{}')",
        "INSERT INTO events (session_id, seq, type, time, data) VALUES (?, 4, 'gap', 0, '{}')",
        "INSERT INTO events (session_id, seq, type, time, data) VALUES (?, -1, 'before', 0, '{}')",
        "INSERT INTO events (session_id, seq, type, time, data) VALUES (?, 2, 'x', 0, '{}') "
        "ON CONFLICT DO UPDATE SET data = 'x'",
        "UPDATE events SET type = 'forged' WHERE session_id = ?",
        "DELETE FROM events WHERE session_id = ? AND seq = 2",
    ],
)
def test_rewriting_history_through_plain_sqlite_is_refused(
    store: SessionStore, raw: sqlite3.Connection, statement: str
) -> None:
    session = store.create().id
    store.append_events(session, [_event(0), _event(1), _event(2)])
    other = store.create().id
    store.append_events(other, [_event(0)])
    before = snapshot_rows(store)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute(statement, (session,))
    assert snapshot_rows(store) == before


def test_a_plain_client_may_append_exactly_the_next_seq(store: SessionStore, raw: sqlite3.Connection) -> None:
    session = store.create().id
    raw.execute(_INSERT, _row(session, 0))
    raw.execute(_INSERT, _row(session, 1))
    assert [e.seq for e in store.events(session)] == [0, 1]


def test_an_event_of_no_session_is_refused(raw: sqlite3.Connection) -> None:
    with pytest.raises(sqlite3.IntegrityError, match="existing session"):
        raw.execute(_INSERT, _row("nobody", 0))


def test_a_fork_child_continues_at_its_seed_and_nowhere_else(
    store: SessionStore, raw: sqlite3.Connection
) -> None:
    parent = store.create().id
    store.append_events(parent, [_event(0), _event(1), _event(2)])
    child = store.fork(parent, at=1).id
    for seq in (0, 1, 3):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            raw.execute(_INSERT, _row(child, seq))
    raw.execute(_INSERT, _row(child, 2))
    assert [(e.seq, e.time) for e in store.events(child)] == [(0, 0), (1, 1), (2, 2)]


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE sessions SET cwd = '/elsewhere' WHERE id = ?",
        "UPDATE sessions SET seed_length = 0, inherits = 0 WHERE id = ?",
        "DELETE FROM sessions WHERE id = ?",
        "INSERT OR REPLACE INTO sessions (id, created_at) VALUES (?, 0)",
        "REPLACE INTO sessions (id, created_at, cwd) VALUES (?, 0, '/forged')",
    ],
)
def test_sessions_rows_are_never_rewritten_or_deleted(
    store: SessionStore, raw: sqlite3.Connection, statement: str
) -> None:
    session = store.create(cwd="/w").id
    store.append_events(session, [_event(0)])
    before = snapshot_rows(store)
    with pytest.raises(sqlite3.IntegrityError, match="sessions are"):
        raw.execute(statement, (session,))
    assert snapshot_rows(store) == before


def _drop_the_guard(raw: sqlite3.Connection) -> None:
    """What a client determined to break the log can still do: drop the trigger (the schema is its to change)."""
    raw.execute("DROP TRIGGER events_next_seq")


def test_reading_a_log_with_a_gap_names_the_gap(store: SessionStore, raw: sqlite3.Connection) -> None:
    session = store.create().id
    store.append_events(session, [_event(0), _event(1, "turn/end"), _event(2)])
    _drop_the_guard(raw)
    raw.execute(_INSERT, _row(session, 6))
    with pytest.raises(LogGapError) as raised:
        list(store.events(session))
    assert (raised.value.after, raised.value.next) == (2, 6)
    assert str(raised.value).startswith(  # the store named first: a user may have several
        f'session store {store.path}: session "{session}" has a gap in its log: seq 2 is followed by seq 6 '
        "(seqs 3..5 missing)"
    )
    with pytest.raises(LogGapError):  # filtered reads (as resume and projection make) see it too
        list(store.events(session, types=("turn/end",)))
    assert [e.seq for e in store.events(session, stop=3)] == [0, 1, 2], "the prefix before the gap reads"


def test_a_log_that_does_not_start_at_zero_is_a_gap(store: SessionStore, raw: sqlite3.Connection) -> None:
    session = store.create().id
    _drop_the_guard(raw)
    raw.execute(_INSERT, _row(session, 1))
    with pytest.raises(LogGapError, match=r"the log starts at seq 1 \(seq 0 missing\)"):
        list(store.events(session))


def test_a_fork_child_with_a_gap_after_its_seed_names_it(
    store: SessionStore, raw: sqlite3.Connection
) -> None:
    parent = store.create().id
    store.append_events(parent, [_event(0), _event(1)])
    child = store.fork(parent).id
    _drop_the_guard(raw)
    raw.execute(_INSERT, _row(child, 3))
    with pytest.raises(LogGapError) as raised:
        list(store.events(child))
    assert (raised.value.after, raised.value.next) == (1, 3)


def test_a_version_1_store_is_upgraded_in_place_and_then_defends_itself(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    _migrate_1(sqlite_utils.Database(conn))
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO sessions (id, created_at) VALUES ('old', 5)")
    for seq in range(3):
        conn.execute(_INSERT, _row("old", seq))
    conn.close()
    conn = sqlite3.connect(
        path, isolation_level=None
    )  # sqlite_utils turned recursive_triggers on; a client need not
    conn.execute(
        "INSERT OR REPLACE INTO events (session_id, seq, type, time, data) VALUES ('old', 1, 'f', 0, '{}')"
    )
    conn.close()  # version 1 let that REPLACE through

    with SessionStore(path) as store:
        assert store.schema_version() == SCHEMA_VERSION == 3
        assert [(e.seq, e.type) for e in store.events("old")] == [(0, "x/y"), (1, "f"), (2, "x/y")]
        store.append_events("old", [_event(3)])
        raw = sqlite3.connect(path, isolation_level=None)
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            raw.execute(
                "INSERT OR REPLACE INTO events (session_id, seq, type, time, data) VALUES ('old', 1, 'g', 0, '{}')"
            )
        with pytest.raises(sqlite3.IntegrityError, match="sessions are"):
            raw.execute("DELETE FROM sessions")
        raw.close()
        assert store.lease_holder("old") is None


def test_a_version_1_store_with_a_gap_migrates_and_the_gap_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    _migrate_1(sqlite_utils.Database(conn))
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO sessions (id, created_at) VALUES ('old', 5)")
    for seq in (0, 1, 5):
        conn.execute(_INSERT, _row("old", seq))
    conn.close()
    with SessionStore(path) as store:
        with pytest.raises(LogGapError, match="seq 1 is followed by seq 5"):
            list(store.events("old"))
        with pytest.raises(LogGapError, match="seq 1 is followed by seq 5"):  # filtered reads too
            list(store.events("old", types=("x/y",)))
        with pytest.raises(LogGapError):
            list(store.events("old", start=3))  # seqs 3 and 4 are missing too
        assert [e.seq for e in store.events("old", stop=2)] == [0, 1], "the prefix before the gap reads"
        assert [e.seq for e in store.events("old", start=5)] == [5], "and so does what follows it"


# rows a client could put at the right seq that dsh would never write
BAD_ROWS = {
    "bogus surface_op": ("user/message", '{"content":[]}', "bogus", None, None),
    "replace without bounds": ("user/message", '{"content":[]}', '{"op":"replace"}', None, None),
    "non-JSON data": ("plugin/x", "{not json", None, None, None),
    "non-JSON extra": ("plugin/x", "{}", None, None, "{nope"),
    "source_event_seqs not a list": ("plugin/x", "{}", None, '{"a":1}', None),
}
_RAW_INSERT = (
    "INSERT INTO events (session_id, seq, type, time, data, surface_op, source_event_seqs, extra) "
    "VALUES (?, ?, ?, 0, ?, ?, ?, ?)"
)


@pytest.mark.parametrize("bad", BAD_ROWS.values(), ids=BAD_ROWS.keys())
def test_a_row_dsh_would_not_write_is_refused_at_the_right_seq(
    store: SessionStore, raw: sqlite3.Connection, bad: tuple[str, ...]
) -> None:
    session = store.create().id
    store.append_events(session, [_event(0)])
    with pytest.raises(sqlite3.IntegrityError, match="events hold what dsh writes"):
        raw.execute(_RAW_INSERT, (session, 1, *bad))
    raw.execute(
        _RAW_INSERT, (session, 1, "user/message", "{}", '{"op":"replace","start":0,"end":0}', "[0]", "{}")
    )
    assert [e.seq for e in store.events(session)] == [0, 1]


@pytest.mark.parametrize("bad", BAD_ROWS.values(), ids=BAD_ROWS.keys())
def test_a_bad_row_past_dropped_triggers_is_named_on_reading(
    store: SessionStore, raw: sqlite3.Connection, bad: tuple[str, ...]
) -> None:
    session = store.create().id
    store.append_events(session, [_event(0), _event(1)])
    raw.execute("DROP TRIGGER events_valid")
    raw.execute(_RAW_INSERT, (session, 2, *bad))
    with pytest.raises(StoreRowError) as raised:
        list(store.events(session))
    assert raised.value.seq == 2
    assert str(raised.value).startswith(
        f'session store {store.path}: session "{session}" event seq 2 is not a row'
    )
    assert [e.seq for e in store.events(session, stop=2)] == [0, 1], "the prefix before it reads"


def test_a_version_2_store_holding_bad_rows_migrates_and_names_them(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    _migrate_1(sqlite_utils.Database(conn))
    _migrate_2(sqlite_utils.Database(conn))
    conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO sessions (id, created_at) VALUES ('old', 5)")
    conn.execute(_INSERT, _row("old", 0))
    conn.execute(_RAW_INSERT, ("old", 1, *BAD_ROWS["bogus surface_op"]))
    conn.close()
    with SessionStore(path) as store:
        assert store.schema_version() == 3
        with pytest.raises(StoreRowError, match='"old" event seq 1 is not a row dsh writes'):
            list(store.events("old"))
        assert [e.seq for e in store.events("old", stop=1)] == [0]
