"""`SessionStore`: the module that speaks SQLite's SQL (but for the schema facts and the session listing it shares
with the msgspec-free `dsh sessions list`, in `_listing`). Sessions and their append-only events in one SQLite file.

WAL, `busy_timeout`, `BEGIN IMMEDIATE` for every write, `PRAGMA user_version` as the schema version with ordered
migrations, and triggers that make the log defend itself against any SQLite client: an event takes exactly the next
seq of its session (no REPLACE, no gap), events are never updated or deleted, `sessions` rows are never rewritten or
deleted. A fork child stores only its own events; its prefix is read by reference from its parent (recursively).
A lease row per session gives it one writer across processes.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from .._errors import (
    LeaseLostError,
    LogGapError,
    SessionExistsError,
    SessionNotFoundError,
    StoreError,
    StoreRowError,
    StoreSchemaError,
)
from .._events import Event, StoredEvent, event_tags
from .._services import Clock, IdMinter
from ._base import LEASE_TTL_MS, Lease, SessionInfo, StoreBase, new_lease, segments
from ._listing import LAST_SEQ_QUERY, SCHEMA_VERSION, SESSION_COLUMNS, SESSIONS_QUERY, log_length
from ._rows import BadRow, EventRow, event_row, lease_of, row_event, row_info, session_row

if TYPE_CHECKING:  # sqlite_utils is imported only to create or migrate a schema: reading needs sqlite3 alone
    import sqlite_utils

__all__ = ["GUARDS", "SCHEMA_VERSION", "SessionStore"]

_BATCH = 2_000

_INSERT = (
    "INSERT INTO events (session_id, seq, type, time, data, surface_op, source_event_seqs, ignorable, extra) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# What a read selects: the envelope's four optional columns folded into one, NULL on most rows (every chunk).
# SQLite hands each selected column to Python on its own, and four NULL columns cost a quarter of a full read.
_READ_COLUMNS = (
    "seq, type, time, data, CASE WHEN surface_op IS NULL AND source_event_seqs IS NULL AND ignorable IS NULL "
    "AND extra IS NULL THEN NULL ELSE json_array(surface_op, source_event_seqs, ignorable, extra) END"
)
_ENVELOPE = msgspec.json.Decoder(tuple[str | None, str | None, int | None, str | None])


def _first(cursor: sqlite3.Cursor) -> Any:
    """The first row of a query run to completion (an unfinished statement would pin its read snapshot)."""
    rows = cursor.fetchall()
    return rows[0] if rows else None


def _read_event(row: tuple[Any, ...]) -> StoredEvent:
    """The event of a row read with `_READ_COLUMNS` (the envelope folded into one column)."""
    seq, kind, time, data, envelope = row
    if envelope is None:
        return StoredEvent(type=kind, seq=seq, time=time, data=data)
    return row_event((seq, kind, time, data, *_ENVELOPE.decode(envelope)))


# SQLite's primary result codes (sqlite3.Error.sqlite_errorcode & 0xff), as `StoreError.problem`
_PROBLEMS = {
    3: "read-only",  # SQLITE_PERM
    5: "locked",  # SQLITE_BUSY
    6: "locked",  # SQLITE_LOCKED
    8: "read-only",  # SQLITE_READONLY
    10: "io",  # SQLITE_IOERR
    11: "damaged",  # SQLITE_CORRUPT
    13: "full",  # SQLITE_FULL
    14: "cannot-open",  # SQLITE_CANTOPEN
    23: "read-only",  # SQLITE_AUTH
    26: "damaged",  # SQLITE_NOTADB
}


def _bad_seq(page: list[tuple[Any, ...]]) -> int:
    """The seq of the first row of `page` whose envelope does not decode."""
    for row in page:
        try:
            _read_event(row)
        except (BadRow, msgspec.DecodeError):
            return int(row[0])
    return int(page[0][0])


def store_error(location: str, error: sqlite3.Error) -> StoreError | None:
    """The `StoreError` naming what `error` says of the store's database, or None for an error of dsh's own SQL or
    of the schema's checks (a trigger's refusal, a constraint), which are not the database failing."""
    code = getattr(error, "sqlite_errorcode", None)
    problem = None if code is None else _PROBLEMS.get(code & 0xFF)
    if problem is None:
        return None
    return StoreError(location, problem, str(error))


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _named_errors(method: _Method) -> _Method:
    """`method` of a `SessionStore`, with the database's failures raised as `StoreError`s naming the store (a
    generator's too, as it is consumed)."""
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def generator(self: SessionStore, *args: Any, **kwargs: Any) -> Any:
            try:
                return (yield from method(self, *args, **kwargs))
            except sqlite3.Error as error:
                raise (store_error(self.location, error) or error) from error

        return generator  # type: ignore[return-value]  # same signature, wrapped

    @functools.wraps(method)
    def wrapper(self: SessionStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as error:
            raise (store_error(self.location, error) or error) from error

    return wrapper  # type: ignore[return-value]  # same signature, wrapped


def _migrate_1(db: sqlite_utils.Database) -> None:
    db.table("sessions").create(
        {
            "id": str,
            "created_at": int,
            "cwd": str,
            "parent_id": str,
            "seed_length": int,
            "inherits": int,
            "delegation_depth": int,
            "spawned_by": str,
            "imported_from": str,
            "header_extra": str,
        },
        pk="id",
        not_null={"created_at", "inherits", "delegation_depth"},
        defaults={"inherits": 0, "delegation_depth": 0},
    )
    db.table("events").create(
        {
            "session_id": str,
            "seq": int,
            "type": str,
            "time": int,
            "data": str,
            "surface_op": str,
            "source_event_seqs": str,
            "ignorable": int,
            "extra": str,
        },
        pk=("session_id", "seq"),
        not_null={"session_id", "seq", "type", "time", "data"},
    )
    db.execute(
        "CREATE INDEX events_turn_bounds ON events (session_id, seq) WHERE type IN ('turn/start', 'turn/end')"
    )
    for action in ("UPDATE", "DELETE"):
        db.execute(
            f"CREATE TRIGGER events_no_{action.lower()} BEFORE {action} ON events "
            f"BEGIN SELECT RAISE(ABORT, 'events are append-only: {action} is refused'); END"
        )


def _migrate_2(db: sqlite_utils.Database) -> None:
    # INSERT OR REPLACE deletes the row it conflicts with without firing DELETE triggers unless recursive_triggers is
    # on (sqlite_utils turns it on for dsh's own connection; a plain client has it off), and nothing refused a gap. An insert must take exactly the next seq of its session (a fork child's first is
    # its seed_length): that refuses REPLACE over an existing event, gaps, and events of a session that does not
    # exist. max(seq) is one probe of the primary key.
    db.execute(
        "CREATE TRIGGER events_next_seq BEFORE INSERT ON events WHEN NEW.seq IS NOT coalesce("
        "(SELECT max(seq) + 1 FROM events WHERE session_id = NEW.session_id), "
        "(SELECT CASE WHEN inherits THEN coalesce(seed_length, 0) ELSE 0 END FROM sessions WHERE id = NEW.session_id)"
        ") BEGIN SELECT RAISE(ABORT, 'events are append-only: an event takes the next seq of an existing session'); END"
    )
    db.execute(
        "CREATE TRIGGER sessions_no_replace BEFORE INSERT ON sessions "
        "WHEN EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id) "
        "BEGIN SELECT RAISE(ABORT, 'sessions are immutable: a session id is inserted once'); END"
    )
    # OF the columns of version 1, all set at creation and never again: a column a later version adds for dsh to
    # maintain is not frozen by this trigger (a migration is frozen too: it names them, not SESSION_COLUMNS)
    db.execute(
        "CREATE TRIGGER sessions_no_update BEFORE UPDATE OF id, created_at, cwd, parent_id, seed_length, inherits, "
        "delegation_depth, spawned_by, imported_from, header_extra ON sessions "
        "BEGIN SELECT RAISE(ABORT, 'sessions are immutable: UPDATE is refused'); END"
    )
    db.execute(
        "CREATE TRIGGER sessions_no_delete BEFORE DELETE ON sessions "
        "BEGIN SELECT RAISE(ABORT, 'sessions are never deleted: DELETE is refused'); END"
    )
    # The guard above keeps every log written from now on contiguous, so a read need not count a log's rows to find
    # a gap: only a log an older store already held with one can have one (or a client that dropped the guard,
    # which a read checks for). Each such log's first gap is written down here, once.
    db.execute(
        "CREATE TABLE log_gaps (session_id TEXT PRIMARY KEY, after INTEGER NOT NULL, next INTEGER NOT NULL)"
    )
    db.execute(
        "INSERT INTO log_gaps (session_id, after, next) "
        "SELECT sid, coalesce(prev, start - 1), min(seq) FROM ("
        "  SELECT e.session_id AS sid, e.seq AS seq,"
        "    lag(e.seq) OVER (PARTITION BY e.session_id ORDER BY e.seq) AS prev,"
        "    CASE WHEN s.inherits THEN coalesce(s.seed_length, 0) ELSE 0 END AS start"
        "  FROM events AS e JOIN sessions AS s ON s.id = e.session_id"
        ") WHERE seq IS NOT coalesce(prev + 1, start) GROUP BY sid"
    )
    # one writer per session across processes: the holder's pid and host, since and until when (ms, wall clock)
    db.execute(
        "CREATE TABLE session_leases (session_id TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL, "
        "since INTEGER NOT NULL, expires INTEGER NOT NULL, token TEXT NOT NULL)"
    )


# A row dsh would write itself: JSON data (and extra), a surface_op that is "append" or a replace with integer bounds,
# source_event_seqs a JSON list. `{row}` is the prefix of the columns (`NEW.` in a trigger); a missing JSON member
# makes a comparison NULL, which counts as invalid.
_ROW_VALID = (
    "coalesce(json_valid({row}data) AND ({row}extra IS NULL OR json_valid({row}extra)) "
    "AND ({row}surface_op IS NULL OR {row}surface_op = 'append' OR CASE WHEN json_valid({row}surface_op) "
    "THEN json_extract({row}surface_op, '$.op') = 'replace' AND json_type({row}surface_op, '$.start') = 'integer' "
    "AND json_type({row}surface_op, '$.end') = 'integer' ELSE 0 END) "
    "AND ({row}source_event_seqs IS NULL OR CASE WHEN json_valid({row}source_event_seqs) "
    "THEN json_type({row}source_event_seqs) = 'array' ELSE 0 END), 0)"
)
_BAD_ROW = "its data or extra is not JSON, or its surface_op or source_event_seqs is malformed"


def _migrate_3(db: sqlite_utils.Database) -> None:
    # The log defends its rows' shape too, not only their seqs: another client's row with a bogus surface_op or
    # non-JSON data would otherwise be read back (and exported) as if dsh had written it. Rows an older store
    # already held are checked once, here, and each session's first bad one is written down, like a gap.
    db.execute(
        "CREATE TRIGGER events_valid BEFORE INSERT ON events WHEN NOT ("
        + _ROW_VALID.format(row="NEW.")
        + ") "
        f"BEGIN SELECT RAISE(ABORT, 'events hold what dsh writes, and this row does not: {_BAD_ROW}'); END"
    )
    db.execute("CREATE TABLE bad_rows (session_id TEXT PRIMARY KEY, seq INTEGER NOT NULL)")
    db.execute(
        "INSERT INTO bad_rows (session_id, seq) SELECT session_id, min(seq) FROM events "
        f"WHERE NOT ({_ROW_VALID.format(row='')}) GROUP BY session_id"
    )


_MIGRATIONS: tuple[Callable[[sqlite_utils.Database], None], ...] = (_migrate_1, _migrate_2, _migrate_3)
GUARDS = ("events_next_seq", "events_valid")
"""The triggers that keep every log written since they stood contiguous and well-formed."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def _create_private(path: Path) -> None:
    """Create the store's file readable by its owner only (0600; SQLite gives its -wal and -shm files the same mode),
    as the sessions hold what the user and the model said; an existing file keeps its mode."""
    # an existing store (or one another process just made) is left alone: its mode is its owner's choice; any other
    # failure (a folder it may not write, a full disk) is left to SQLite's open, which names the store and the cause
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


class SessionStore(StoreBase):
    """Sessions and their events in one SQLite file; safe for several processes writing different sessions. What each
    method promises is `SessionStoreProtocol`'s; a method here says only how SQLite keeps it. Every method raises the
    database's failures as `StoreError` naming the store (`_named_errors`)."""

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock | None = None,
        ids: IdMinter | None = None,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 10_000,
        lease_ttl_ms: int = LEASE_TTL_MS,
        wall_ms: Callable[[], int] = _wall_ms,
    ) -> None:
        super().__init__(clock=clock, ids=ids, lease_ttl_ms=lease_ttl_ms)
        self.path = Path(path)
        self._wall_ms = wall_ms  # leases only: the log's times come from `clock`
        self._synchronous = synchronous
        self._busy_timeout_ms = busy_timeout_ms
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _create_private(self.path)
        self._lock = threading.RLock()
        self._conn = self.connect()
        self._conn.execute("PRAGMA recursive_triggers = ON")  # as sqlite_utils.Database sets it, built or not
        self._db: sqlite_utils.Database | None = None
        try:
            self._migrate()
        except BaseException:
            self._conn.close()
            raise

    # ------------------------------------------------------------ connections and transactions

    @property
    def db(self) -> sqlite_utils.Database:
        """The store's connection as a `sqlite_utils.Database` (what schema migrations are written against)."""
        if self._db is None:
            import sqlite_utils

            self._db = sqlite_utils.Database(self._conn)
        return self._db

    @_named_errors
    def connect(self) -> sqlite3.Connection:
        """Configured like every other of the store's connections (WAL, busy timeout, `synchronous`)."""
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=self._busy_timeout_ms / 1000
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        return conn

    @property
    def location(self) -> str:
        """The store file."""
        return str(self.path)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _write(self, conn: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        connection = conn or self._conn
        with self._lock:
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    @_named_errors
    def _migrate(self) -> None:
        with self._write() as conn:
            version = _first(conn.execute("PRAGMA user_version"))[0]
            if version > SCHEMA_VERSION:
                raise StoreSchemaError(
                    f"{self.path} has schema version {version}, newer than this dsh reads ({SCHEMA_VERSION}); "
                    "upgrade dsh"
                )
            for number in range(version, SCHEMA_VERSION):  # self.db (sqlite_utils) is built only here
                _MIGRATIONS[number](self.db)
            if version != SCHEMA_VERSION:  # an up-to-date store is not written to (a synced commit)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @_named_errors
    def schema_version(self) -> int:
        with self._lock:
            return int(_first(self._conn.execute("PRAGMA user_version"))[0])

    # ------------------------------------------------------------ sessions

    @_named_errors
    def _has_session(self, session_id: str) -> bool:
        with self._lock:
            return bool(_first(self._conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,))))

    @_named_errors
    def _add_session(self, info: SessionInfo) -> None:
        with self._write() as conn:
            self._insert_session(conn, info)

    def _insert_session(self, conn: sqlite3.Connection, info: SessionInfo) -> None:
        if _first(conn.execute("SELECT 1 FROM sessions WHERE id = ?", (info.id,))):
            raise SessionExistsError(info.id)
        conn.execute(
            f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            session_row(info),
        )

    @_named_errors
    def info(self, session_id: str) -> SessionInfo:
        with self._lock:
            row = _first(
                self._conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
            )
        if row is None:
            raise SessionNotFoundError(session_id, store=str(self.path))
        return row_info(row)

    @_named_errors
    def sessions(self) -> list[SessionInfo]:
        with self._lock:
            rows = self._conn.execute(SESSIONS_QUERY).fetchall()
        return [row_info(row) for row in rows]

    @_named_errors
    def children(self, session_id: str) -> list[SessionInfo]:
        info = self.info(session_id)
        names = [info.id] if info.imported_from is None else [info.id, info.imported_from]
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE parent_id IN ({', '.join('?' * len(names))}) "
                "AND id != ? ORDER BY created_at, id",
                [*names, info.id],
            ).fetchall()
        return [row_info(row) for row in rows]

    @_named_errors
    def length(self, session_id: str) -> int:
        info = self.info(session_id)
        with self._lock:
            top = _first(self._conn.execute(LAST_SEQ_QUERY, (session_id,)))[0]
        return log_length(info.inherits, info.seed_length, top)

    # ------------------------------------------------------------ reading

    def _segments(self, session_id: str, stop: int | None) -> list[tuple[str, int, int | None]]:
        return segments(self._chain(session_id), stop)

    def _chain(self, session_id: str) -> Iterator[tuple[str, str | None, int | None, bool]]:
        """The session and the parents its log inherits from, nearest first, each read when `segments` asks."""
        current: str | None = session_id
        while current is not None:
            info = self.info(current)
            yield current, info.parent_id, info.seed_length, info.inherits
            current = info.parent_id if info.inherits else None

    @_named_errors
    def events(
        self,
        session_id: str,
        *,
        start: int = 0,
        stop: int | None = None,
        types: Collection[str | type[Event]] | None = None,
        skip_types: Collection[str | type[Event]] | None = None,
    ) -> Iterator[StoredEvent]:
        """Filters and keyset pages in SQL; each log segment is checked for gaps and bad rows first (`_check_log`)."""
        types, skip_types = event_tags(types), event_tags(skip_types)  # classes to their wire tags
        if types is not None and not types:
            return
        filters, params = "", []
        if types is not None:
            filters += f" AND type IN ({', '.join('?' * len(types))})"
            params += list(types)
        if skip_types:
            filters += f" AND type NOT IN ({', '.join('?' * len(skip_types))})"
            params += list(skip_types)
        for owner, low, high in self._segments(session_id, stop):
            # keyset pages: each query runs to completion, so an abandoned iterator never pins an old snapshot
            low = max(low, start)
            bound = "" if high is None else " AND seq < ?"
            bound_params: list[object] = [] if high is None else [high]
            self._check_log(session_id, owner, low, high)
            query = f"SELECT {_READ_COLUMNS} FROM events WHERE session_id = ? AND seq >= ?{bound}{filters} ORDER BY seq LIMIT ?"
            while True:
                with self._lock:
                    page = self._conn.execute(query, [owner, low, *bound_params, *params, _BATCH]).fetchall()
                try:
                    yield from map(_read_event, page)
                except (BadRow, msgspec.DecodeError) as error:
                    seq = error.seq if isinstance(error, BadRow) else _bad_seq(page)
                    raise StoreRowError(session_id, seq, str(error), store=self.location) from None
                if len(page) < _BATCH:
                    break
                low = page[-1][0] + 1

    def _check_log(self, session_id: str, owner: str, low: int, high: int | None) -> None:
        """Raise `LogGapError` if `owner`'s events from `low` (within the bound) skip a seq, `StoreRowError` if one
        of them is a row dsh would not write. While the guards stand no log can gain either, so what an older store
        held (recorded when it migrated) is all there is to look up; a store whose guards were dropped has its rows
        counted and checked."""
        with self._lock:
            guards = _first(
                self._conn.execute(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?)", GUARDS
                )
            )[0]
            if guards == len(GUARDS):
                known = self._conn.execute(
                    "SELECT after, next FROM log_gaps WHERE session_id = ?", (owner,)
                ).fetchone()
                # seqs after+1 .. next-1 are missing: a read that covers any of them meets the gap
                if known is not None and known[1] - 1 >= low and (high is None or known[0] + 1 < high):
                    raise LogGapError(session_id, after=known[0], next=known[1], store=self.location)
                bad = self._conn.execute("SELECT seq FROM bad_rows WHERE session_id = ?", (owner,)).fetchone()
                if bad is not None and bad[0] >= low and (high is None or bad[0] < high):
                    raise StoreRowError(session_id, bad[0], _BAD_ROW, store=self.location)
                return
        self._count_contiguous(session_id, owner, low, high)
        where = "session_id = ? AND seq >= ?" + ("" if high is None else " AND seq < ?")
        with self._lock:
            bad = _first(
                self._conn.execute(
                    f"SELECT min(seq) FROM events WHERE {where} AND NOT ({_ROW_VALID.format(row='')})",
                    [owner, low] if high is None else [owner, low, high],
                )
            )[0]
        if bad is not None:
            raise StoreRowError(session_id, bad, _BAD_ROW, store=self.location)

    def _count_contiguous(self, session_id: str, owner: str, low: int, high: int | None) -> None:
        """The check without the guard: one count over the primary key, and a search for the gap only when the
        count says there is one."""
        where = "session_id = ? AND seq >= ?" + ("" if high is None else " AND seq < ?")
        params: list[object] = [owner, low] if high is None else [owner, low, high]
        with self._lock:
            count, first, last = _first(
                self._conn.execute(f"SELECT count(*), min(seq), max(seq) FROM events WHERE {where}", params)
            )
            if count == 0 or (first == low and last - first + 1 == count):
                return
            if first != low:
                raise LogGapError(session_id, after=low - 1, next=first, store=self.location)
            after = _first(
                self._conn.execute(
                    f"SELECT seq FROM events AS e WHERE {where} AND NOT EXISTS "
                    "(SELECT 1 FROM events WHERE session_id = e.session_id AND seq = e.seq + 1) ORDER BY seq LIMIT 1",
                    params,
                )
            )[0]
            following = _first(
                self._conn.execute(
                    "SELECT min(seq) FROM events WHERE session_id = ? AND seq > ?", (owner, after)
                )
            )[0]
        raise LogGapError(session_id, after=after, next=following, store=self.location)

    # ------------------------------------------------------------ writing

    @_named_errors
    def append_events(
        self,
        session_id: str,
        events: Iterable[StoredEvent],
        *,
        conn: sqlite3.Connection | None = None,
        lease: Lease | None = None,
    ) -> None:
        """`conn`: a connection of the caller's own to write on (the store's by default)."""
        rows = [event_row(session_id, event) for event in events]
        with self._write(conn) as connection:
            if lease is not None:
                self._check_lease(connection, lease)
            connection.executemany(_INSERT, rows)

    @_named_errors
    def insert_rows(
        self, conn: sqlite3.Connection, rows: list[EventRow], *, lease: Lease | None = None
    ) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if lease is not None:
                self._check_lease(conn, lease)
            conn.executemany(_INSERT, rows)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @_named_errors
    def wait_for_events(self, session_id: str, length: int, timeout: float) -> None:
        """Polls the WAL file and the database file (every 20 ms) for a change of size or mtime."""
        files = (self.path, self.path.with_name(self.path.name + "-wal"))

        def marks() -> tuple[tuple[int, int], ...]:
            stats = []
            for file in files:
                try:
                    stat = file.stat()
                except FileNotFoundError:  # no WAL file between checkpoints: its absence is a mark too
                    stats.append((-1, -1))
                else:
                    stats.append((stat.st_mtime_ns, stat.st_size))
            return tuple(stats)

        before = marks()
        if self.length(session_id) > length:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and marks() == before:
            time.sleep(0.02)

    @_named_errors
    def import_session(self, info: SessionInfo, events: Iterable[StoredEvent]) -> SessionInfo:
        with self._write() as conn:
            self._insert_session(conn, info)
            batch: list[EventRow] = []
            for event in events:
                batch.append(event_row(info.id, event))
                if len(batch) >= _BATCH:
                    conn.executemany(_INSERT, batch)
                    batch.clear()
            conn.executemany(_INSERT, batch)
        return info

    # ------------------------------------------------------------ leases (one writer per session)

    @_named_errors
    def lease_holder(self, session_id: str) -> Lease | None:
        """Its `session_leases` row, expired or not."""
        with self._lock:
            return self._holder(self._conn, session_id)

    @staticmethod
    def _holder(conn: sqlite3.Connection, session_id: str) -> Lease | None:
        row = _first(
            conn.execute(
                "SELECT pid, host, since, expires, token FROM session_leases WHERE session_id = ?",
                (session_id,),
            )
        )
        return None if row is None else lease_of(session_id, row)

    @_named_errors
    def acquire_lease(self, session_id: str) -> Lease:
        """A held lease's holder is gone when its pid is dead on this host, or the lease expired."""
        now = self._wall_ms()
        mine = new_lease(session_id, now=now, ttl_ms=self.lease_ttl_ms)
        with self._write() as conn:
            held = self._holder(conn, session_id)
            if held is not None:
                gone = held.expires <= now or (held.host == mine.host and not _pid_alive(held.pid))
                if not gone:
                    raise held.in_use()
                conn.execute("DELETE FROM session_leases WHERE session_id = ?", (session_id,))
            conn.execute(
                "INSERT INTO session_leases (session_id, pid, host, since, expires, token) VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, mine.pid, mine.host, mine.since, mine.expires, mine.token),
            )
        return mine

    @_named_errors
    def renew_lease(self, lease: Lease) -> None:
        """Pushes its `expires` a TTL ahead."""
        with self._write() as conn:
            self._check_lease(conn, lease)
            conn.execute(
                "UPDATE session_leases SET expires = ? WHERE session_id = ? AND token = ?",
                (self._wall_ms() + self.lease_ttl_ms, lease.session_id, lease.token),
            )

    @_named_errors
    def release_lease(self, lease: Lease) -> None:
        with self._write() as conn:
            conn.execute(
                "DELETE FROM session_leases WHERE session_id = ? AND token = ?",
                (lease.session_id, lease.token),
            )

    def _check_lease(self, conn: sqlite3.Connection, lease: Lease) -> None:
        held = self._holder(conn, lease.session_id)
        if held is None:  # expired, taken over and released by another process meanwhile
            raise LeaseLostError(lease.session_id)
        if held.token != lease.token:  # taken over: this process stalled past its lease's expiry
            raise held.in_use()

    # ------------------------------------------------------------ fork (the checks are `StoreBase.fork`'s)

    @_named_errors
    def _last_turn_bound(self, owner: str, low: int, high: int) -> tuple[int, str] | None:
        with self._lock:
            row = _first(
                self._conn.execute(
                    "SELECT seq, type FROM events WHERE session_id = ? AND seq >= ? AND seq < ? "
                    "AND type IN ('turn/start', 'turn/end') ORDER BY seq DESC LIMIT 1",
                    (owner, low, high),
                )
            )
        return None if row is None else (int(row[0]), str(row[1]))
