"""`PgStore`: the session store on PostgreSQL (psycopg 3, a connection pool), the same tables, columns and events as
the SQLite store, with its guarantees enforced by the server.

Triggers refuse UPDATE, DELETE and TRUNCATE on `events` and any insert that is not its session's next seq (checked
once per statement over its rows), so every client is held to the log's shape, not only dsh. A writer's group commit is one COPY per flush. A fork stores only
its own events. One writer per session: the writer's connection holds a session-level advisory lock (the server
releases it when the connection drops, a killed writer included) and names itself in `session_leases` for the refusal
message. Every insert notifies channel `dsh_events` with the session id, which `dsh sessions tail` listens on.
Rows are encoded and decoded by the codecs both stores share (`_rows`), so both read and write the same values; what
is not SQL (creating and forking a session, its clock and ids) is `StoreBase`'s.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from .._errors import (
    LeaseLostError,
    LogGapError,
    SessionExistsError,
    SessionInUseError,
    SessionNotFoundError,
    StoreConnectError,
    StoreError,
    StoreRowError,
    StoreSchemaError,
)
from .._events import Event, StoredEvent, event_tags
from .._services import Clock, IdMinter
from ._base import LEASE_TTL_MS, Lease, SessionInfo, StoreBase, new_lease, segments
from ._listing import SESSION_COLUMNS, SESSIONS_QUERY, log_length
from ._rows import EVENT_COLUMNS, BadRow, EventRow, event_row, lease_of, row_event, row_info, session_row
from ._urls import redact, redact_url

__all__ = ["PG_SCHEMA_VERSION", "PgStore"]

PG_SCHEMA_VERSION = 2
_BATCH = 5_000
_CHANNEL = "dsh_events"
_EVENT_COLUMNS = f"session_id, {EVENT_COLUMNS}"
_INSERT = f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
_COPY = f"COPY events ({_EVENT_COLUMNS}) FROM STDIN"
# one advisory-lock namespace for migrations (pg_advisory_xact_lock(bigint)); leases hash schema and session id
_MIGRATION_LOCK = 0x647368_5F6D6967  # "dsh_mig"
_LEASE_KEY = "hashtextextended(current_schema() || '/' || %s, 0)"

_SCHEMA_1 = """
CREATE TABLE dsh_schema (version integer NOT NULL);
INSERT INTO dsh_schema VALUES (0);
CREATE TABLE sessions (
    id text PRIMARY KEY,
    created_at bigint NOT NULL,
    cwd text,
    parent_id text,
    seed_length bigint,
    inherits integer NOT NULL DEFAULT 0,
    delegation_depth integer NOT NULL DEFAULT 0,
    spawned_by text,
    imported_from text,
    header_extra text
);
CREATE TABLE events (
    session_id text NOT NULL,
    seq bigint NOT NULL,
    type text NOT NULL,
    time bigint NOT NULL,
    data text NOT NULL,
    surface_op text,
    source_event_seqs text,
    ignorable integer,
    extra text,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX events_turn_bounds ON events (session_id, seq) WHERE type IN ('turn/start', 'turn/end');
CREATE TABLE session_leases (
    session_id text PRIMARY KEY,
    pid integer NOT NULL,
    host text NOT NULL,
    since bigint NOT NULL,
    expires bigint NOT NULL,
    token text NOT NULL
);

-- Each insert statement's rows, per session, must be contiguous and start at the session's next seq: one past its
-- last event before them, or, for the first, 0 (a fork child: its seed length). Checked once per statement over its
-- rows (the primary key already refuses a seq twice), then one notification per session, delivered at commit.
CREATE FUNCTION events_after_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    bad record;
BEGIN
    SELECT batch.session_id, batch.low, batch.high, batch.rows, owner.id IS NULL AS unknown,
           coalesce(before.top + 1, CASE WHEN owner.inherits <> 0 THEN coalesce(owner.seed_length, 0) ELSE 0 END)
               AS expected
    INTO bad
    FROM (SELECT session_id, min(seq) AS low, max(seq) AS high, count(*) AS rows FROM added GROUP BY session_id)
        AS batch
    LEFT JOIN sessions AS owner ON owner.id = batch.session_id
    LEFT JOIN LATERAL (
        SELECT max(seq) AS top FROM events WHERE session_id = batch.session_id AND seq < batch.low
    ) AS before ON true
    WHERE owner.id IS NULL
       OR batch.high - batch.low + 1 <> batch.rows
       OR batch.low <> coalesce(
           before.top + 1, CASE WHEN owner.inherits <> 0 THEN coalesce(owner.seed_length, 0) ELSE 0 END)
    LIMIT 1;
    IF FOUND THEN
        IF bad.unknown THEN
            RAISE EXCEPTION 'events are append-only: an event takes the next seq of an existing session, and '
                'there is no session "%" (seq %)', bad.session_id, bad.low USING ERRCODE = 'foreign_key_violation';
        END IF;
        RAISE EXCEPTION 'events are append-only: session "%" appends seq % next, not seqs %..% (% rows)',
            bad.session_id, bad.expected, bad.low, bad.high, bad.rows USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    PERFORM pg_notify('dsh_events', session_id) FROM (SELECT DISTINCT session_id FROM added) AS sessions;
    RETURN NULL;
END $$;
CREATE TRIGGER events_after_insert AFTER INSERT ON events REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION events_after_insert();

-- a session row is written once: its columns never change and it is never deleted (a duplicate id is the primary
-- key's to refuse)
CREATE FUNCTION sessions_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'sessions are never deleted: DELETE is refused' USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RAISE EXCEPTION 'sessions are immutable: % is refused', TG_OP USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER sessions_no_update BEFORE UPDATE OF id, created_at, cwd, parent_id, seed_length, inherits,
    delegation_depth, spawned_by, imported_from, header_extra ON sessions
    FOR EACH ROW EXECUTE FUNCTION sessions_refuse();
CREATE TRIGGER sessions_no_delete BEFORE DELETE ON sessions FOR EACH STATEMENT EXECUTE FUNCTION sessions_refuse();
CREATE TRIGGER sessions_no_truncate BEFORE TRUNCATE ON sessions FOR EACH STATEMENT EXECUTE FUNCTION sessions_refuse();

CREATE FUNCTION events_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only: % is refused', TG_OP USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events FOR EACH STATEMENT EXECUTE FUNCTION events_refuse();
CREATE TRIGGER events_no_delete BEFORE DELETE ON events FOR EACH STATEMENT EXECUTE FUNCTION events_refuse();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION events_refuse();

"""
# Version 2: the rows' shape is the schema's to defend too (SQLite's events_valid trigger): JSON data and extra, a
# surface_op that is "append" or a replace with numeric bounds, source_event_seqs a JSON list. A text that is not
# JSON fails its cast, which refuses the row as the CHECK would; a missing member is NULL, refused too. NOT VALID: rows an older store holds are not
# rechecked (reading one that does not decode is a StoreRowError).
_SCHEMA_2 = """
ALTER TABLE events ADD CONSTRAINT events_valid CHECK (coalesce(
    data::json IS NOT NULL
    AND (extra IS NULL OR extra::json IS NOT NULL)
    AND (surface_op IS NULL OR surface_op = 'append' OR (
        surface_op::json ->> 'op' = 'replace'
        AND json_typeof(surface_op::json -> 'start') = 'number'
        AND json_typeof(surface_op::json -> 'end') = 'number'))
    AND (source_event_seqs IS NULL OR json_typeof(source_event_seqs::json) = 'array'), false)
) NOT VALID;
"""
_MIGRATIONS: tuple[str, ...] = (_SCHEMA_1, _SCHEMA_2)
# a session and the parents its log inherits from, nearest first (bounded, against a hand-made cycle)
_CHAIN = """
WITH RECURSIVE chain AS (
    SELECT id, parent_id, seed_length, inherits, 0 AS depth FROM sessions WHERE id = %s
    UNION ALL
    SELECT s.id, s.parent_id, s.seed_length, s.inherits, chain.depth + 1
    FROM sessions AS s JOIN chain ON s.id = chain.parent_id
    WHERE chain.inherits <> 0 AND chain.depth < 10000
)
SELECT id, parent_id, seed_length, inherits FROM chain ORDER BY depth
"""


_Method = TypeVar("_Method", bound=Callable[..., Any])
_BACKOFF = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
"""Seconds between the tries of a read whose connection was lost (a server restarted under a running dsh): about
six seconds in all, and never past the store's `reconnect_for`."""


def _lost(store: PgStore, error: psycopg.Error) -> StoreError:
    return StoreError(store.location, "lost", redact(str(error).strip(), store.url))


def _reconnecting(method: _Method) -> _Method:
    """A read of a `PgStore` tried again, with backoff, while its server cannot be reached (the pool replaces the
    connections it lost); still lost after the store's `reconnect_for` seconds, a `StoreError` says so."""

    @functools.wraps(method)
    def tried(self: PgStore, *args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + self.reconnect_for
        for delay in (*_BACKOFF, None):
            try:
                return method(self, *args, **kwargs)
            except psycopg.OperationalError as error:
                if delay is None or time.monotonic() + delay > deadline:
                    raise _lost(self, error) from None
                time.sleep(delay)
        raise AssertionError("unreachable: the last try returns or raises")

    return tried  # type: ignore[return-value]  # same signature, wrapped


def _once(method: _Method) -> _Method:
    """A write of a `PgStore`, not tried again (whether a lost connection committed it is unknown; the next-seq
    guard refuses a second copy): its lost connection is a `StoreError` saying so."""

    @functools.wraps(method)
    def wrapper(self: PgStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except psycopg.OperationalError as error:
            raise _lost(self, error) from None

    return wrapper  # type: ignore[return-value]  # same signature, wrapped


class PgStore(StoreBase):
    """Sessions and their events in one PostgreSQL schema (the URL's `search_path`, by default `public`); safe for
    many processes on many hosts writing different sessions. What each method promises is `SessionStoreProtocol`'s; a
    method here says only how PostgreSQL keeps it. A read is tried again while the server is lost (`_reconnecting`),
    a write is not (`_once`)."""

    def __init__(
        self,
        url: str,
        *,
        clock: Clock | None = None,
        ids: IdMinter | None = None,
        pool_size: int = 4,
        connect_timeout: float = 10.0,
        lease_ttl_ms: int = LEASE_TTL_MS,
        reconnect_for: float = 10.0,
    ) -> None:
        super().__init__(clock=clock, ids=ids, lease_ttl_ms=lease_ttl_ms)
        self.url = url
        self.reconnect_for = reconnect_for
        self._leases: dict[
            str, tuple[psycopg.Connection[Any], int]
        ] = {}  # token -> (its connection, lock key)
        self._leases_lock = threading.Lock()
        self._connect_timeout = connect_timeout
        self._listener: psycopg.Connection[Any] | None = None
        with self.connect() as conn:  # fail fast, with the reason, before a pool retries in the background
            self._migrate(conn)
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "connect_timeout": int(connect_timeout)},
            timeout=connect_timeout,
            open=True,
            name=f"dsh-store {self.location}",
        )

    # ------------------------------------------------------------ connections

    @property
    def location(self) -> str:
        """The database's URL without its password."""
        return redact_url(self.url)

    def connect(self) -> psycopg.Connection[Any]:
        """A new autocommit connection (the pool's are alike)."""
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=int(self._connect_timeout))
        except psycopg.Error as error:
            # libpq's message may quote the URL, or the piece of it it could not parse (a password's bad
            # percent-escape): it is shown without the password
            raise StoreConnectError(self.location, redact(str(error).strip(), self.url)) from None

    def close(self) -> None:
        with self._leases_lock:
            held, self._leases = list(self._leases.values()), {}
        for conn, _ in held:  # a lease still held when its store closes ends with it
            conn.close()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        self._pool.close()

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        # the common case, a store of this version, in one round trip and without the migration lock
        try:
            current = conn.execute("SELECT version FROM dsh_schema").fetchone()
        except psycopg.errors.UndefinedTable:  # a new store (or not one): decided below, under the lock
            current = None
        if current is not None and current[0] == PG_SCHEMA_VERSION:
            return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            schema = conn.execute("SELECT current_schema()").fetchone()
            if schema is None or schema[0] is None:
                raise StoreSchemaError(
                    f"{self.location}: the search_path names no existing schema; create it first "
                    "(CREATE SCHEMA name) or point the URL's options=-csearch_path=name at one"
                )
            known = conn.execute("SELECT to_regclass('dsh_schema') IS NOT NULL").fetchone()
            if known is not None and not known[0]:
                taken = conn.execute("SELECT to_regclass('events') IS NOT NULL").fetchone()
                if taken is not None and taken[0]:
                    raise StoreSchemaError(
                        f"{self.location}: schema {schema[0]} has an events table but is not a dsh store; "
                        "choose another schema or database"
                    )
                conn.execute(_MIGRATIONS[0])
                version = 1
            else:
                version = self._version(conn)
            if version > PG_SCHEMA_VERSION:
                raise StoreSchemaError(
                    f"{self.location} has schema version {version}, newer than this dsh reads "
                    f"({PG_SCHEMA_VERSION}); upgrade dsh"
                )
            for number in range(version, PG_SCHEMA_VERSION):
                conn.execute(_MIGRATIONS[number])
            conn.execute("UPDATE dsh_schema SET version = %s", (PG_SCHEMA_VERSION,))

    @staticmethod
    def _version(conn: psycopg.Connection[Any]) -> int:
        row = conn.execute("SELECT version FROM dsh_schema").fetchone()
        return 0 if row is None else int(row[0])

    @_reconnecting
    def schema_version(self) -> int:
        with self._pool.connection() as conn:
            return self._version(conn)

    def _one(self, query: str, params: tuple[object, ...] | list[object]) -> Any:
        with self._pool.connection() as conn:
            return conn.execute(query, params).fetchone()

    # ------------------------------------------------------------ sessions

    @_reconnecting
    def _has_session(self, session_id: str) -> bool:
        return bool(self._one("SELECT 1 FROM sessions WHERE id = %s", (session_id,)))

    @_once
    def _add_session(self, info: SessionInfo) -> None:
        with self._pool.connection() as conn, conn.transaction():
            self._insert_session(conn, info)

    @staticmethod
    def _insert_session(conn: psycopg.Connection[Any], info: SessionInfo) -> None:
        inserted = conn.execute(
            f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (id) DO NOTHING",
            session_row(info),
        )
        if inserted.rowcount == 0:
            raise SessionExistsError(info.id)

    @_reconnecting
    def info(self, session_id: str) -> SessionInfo:
        row = self._one(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = %s", (session_id,))
        if row is None:
            raise SessionNotFoundError(session_id, store=self.location)
        return row_info(row)

    @_reconnecting
    def sessions(self) -> list[SessionInfo]:
        with self._pool.connection() as conn:
            rows = conn.execute(SESSIONS_QUERY).fetchall()
        return [row_info(row) for row in rows]

    @_reconnecting
    def children(self, session_id: str) -> list[SessionInfo]:
        info = self.info(session_id)
        names = [info.id] if info.imported_from is None else [info.id, info.imported_from]
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE parent_id = ANY(%s) AND id != %s "
                "ORDER BY created_at, id",
                (names, info.id),
            ).fetchall()
        return [row_info(row) for row in rows]

    @_reconnecting
    def length(self, session_id: str) -> int:
        row = self._one(
            "SELECT s.inherits, s.seed_length, (SELECT max(seq) FROM events WHERE session_id = s.id) "
            "FROM sessions s WHERE s.id = %s",
            (session_id,),
        )
        if row is None:
            raise SessionNotFoundError(session_id, store=self.location)
        inherits, seed, top = row
        return log_length(bool(inherits), seed, top)

    # ------------------------------------------------------------ reading

    @_reconnecting
    def _segments(self, session_id: str, stop: int | None) -> list[tuple[str, int, int | None]]:
        """(session, from seq, to seq exclusive) pieces of the full log, oldest first; the chain of parents a
        fork reads by reference comes in one query."""
        with self._pool.connection() as conn:
            chain = conn.execute(_CHAIN, (session_id,)).fetchall()
        if not chain:
            raise SessionNotFoundError(session_id, store=self.location)
        _, last_parent, _, last_inherits = chain[-1]
        if last_inherits and last_parent is not None:  # the chain breaks: a parent is missing
            raise SessionNotFoundError(last_parent, store=self.location)
        return segments(chain, stop)  # rows of (id, parent_id, seed_length, inherits), nearest first

    def events(
        self,
        session_id: str,
        *,
        start: int = 0,
        stop: int | None = None,
        types: Collection[str | type[Event]] | None = None,
        skip_types: Collection[str | type[Event]] | None = None,
    ) -> Iterator[StoredEvent]:
        """Filters and keyset pages in SQL; each log segment is counted for gaps first (`_check_contiguous`)."""
        types, skip_types = event_tags(types), event_tags(skip_types)  # classes to their wire tags
        if types is not None and not types:
            return
        filters, params = "", []
        if types is not None:
            filters += " AND type = ANY(%s)"
            params.append(list(types))
        if skip_types:
            filters += " AND type <> ALL(%s)"
            params.append(list(skip_types))
        for owner, low, high in self._segments(session_id, stop):
            # each page is its own query run to completion: an abandoned iterator holds no connection
            low = max(low, start)
            bound = "" if high is None else " AND seq < %s"
            bound_params: list[object] = [] if high is None else [high]
            self._check_contiguous(session_id, owner, low, bound, bound_params)
            query = (
                f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = %s AND seq >= %s{bound}{filters} "
                "ORDER BY seq LIMIT %s"
            )
            while True:
                page = self._page(query, [owner, low, *bound_params, *params, _BATCH])
                try:
                    yield from map(row_event, page)
                except BadRow as bad:
                    raise StoreRowError(session_id, bad.seq, bad.reason, store=self.location) from None
                if len(page) < _BATCH:
                    break
                low = page[-1][0] + 1

    @_reconnecting
    def _page(self, query: str, params: list[object]) -> list[tuple[Any, ...]]:
        with self._pool.connection() as conn:
            return conn.execute(query, params).fetchall()

    @_reconnecting
    def _check_contiguous(
        self, session_id: str, owner: str, low: int, bound: str, bound_params: list[object]
    ) -> None:
        """Raise `LogGapError` if `owner`'s events from `low` (within the bound) skip a seq (possible only if a
        client disabled the triggers): one count over the primary key, a search only when it finds a gap."""
        where = f"session_id = %s AND seq >= %s{bound}"
        params = [owner, low, *bound_params]
        with self._pool.connection() as conn:
            row = conn.execute(
                f"SELECT count(*), min(seq), max(seq) FROM events WHERE {where}", params
            ).fetchone()
            assert row is not None  # an aggregate returns one row
            count, first, last = row
            if count == 0 or (first == low and last - first + 1 == count):
                return
            if first != low:
                raise LogGapError(session_id, after=low - 1, next=first)
            gap = conn.execute(
                f"SELECT seq FROM events AS e WHERE {where} AND NOT EXISTS "
                "(SELECT 1 FROM events WHERE session_id = e.session_id AND seq = e.seq + 1) ORDER BY seq LIMIT 1",
                params,
            ).fetchone()
            assert gap is not None  # the count says a seq is missing below the last
            following = conn.execute(
                "SELECT min(seq) FROM events WHERE session_id = %s AND seq > %s", (owner, gap[0])
            ).fetchone()
            assert following is not None
        raise LogGapError(session_id, after=int(gap[0]), next=int(following[0]))

    # ------------------------------------------------------------ writing

    @_once
    def append_events(
        self, session_id: str, events: Iterable[StoredEvent], *, lease: Lease | None = None
    ) -> None:
        """One COPY; with `lease`, over the lease's own connection (`insert_rows`)."""
        rows = [event_row(session_id, event) for event in events]
        if lease is not None:
            _copy(self._lease_conn(lease), rows)
            return
        with self._pool.connection() as conn:
            _copy(conn, rows)

    @_once
    def import_session(self, info: SessionInfo, events: Iterable[StoredEvent]) -> SessionInfo:
        with self._pool.connection() as conn, conn.transaction():
            self._insert_session(conn, info)
            with conn.cursor().copy(_COPY) as copy:
                for event in events:
                    copy.write_row(event_row(info.id, event))
        return info

    @_once
    def insert_rows(
        self, conn: psycopg.Connection[Any], rows: list[EventRow], *, lease: Lease | None = None
    ) -> None:
        """One COPY. With `lease` the rows go over the lease's own connection, the one holding the session's
        advisory lock: if it is gone, so is the lease, and nothing is written (`LeaseLostError`)."""
        _copy(conn if lease is None else self._lease_conn(lease), rows)

    # ------------------------------------------------------------ leases (one writer per session)

    @_once
    def acquire_lease(self, session_id: str) -> Lease:
        """A session-level advisory lock on a connection of its own, held until `release_lease` or until that
        connection drops (its process killed, its host gone), so a gone holder is known at once; a row in
        `session_leases` names the holder for the refusal of any other."""
        self.info(session_id)
        conn = self.connect()
        try:
            row = conn.execute(
                f"SELECT key, pg_try_advisory_lock(key), (extract(epoch FROM now()) * 1000)::bigint "
                f"FROM (SELECT {_LEASE_KEY} AS key) AS lease",
                (session_id,),
            ).fetchone()
            assert row is not None  # a SELECT over one derived row returns it
            key, got, now = int(row[0]), bool(row[1]), int(row[2])
            if not got:
                raise _in_use(conn, session_id)
            mine = new_lease(session_id, now=now, ttl_ms=self.lease_ttl_ms)
            conn.execute(
                "INSERT INTO session_leases (session_id, pid, host, since, expires, token) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET pid = EXCLUDED.pid, "
                "host = EXCLUDED.host, since = EXCLUDED.since, expires = EXCLUDED.expires, token = EXCLUDED.token",
                (session_id, mine.pid, mine.host, mine.since, mine.expires, mine.token),
            )
        except BaseException:
            conn.close()
            raise
        with self._leases_lock:
            self._leases[mine.token] = (conn, key)
        return mine

    def _lease_conn(self, lease: Lease) -> psycopg.Connection[Any]:
        with self._leases_lock:
            held = self._leases.get(lease.token)
        if held is None or held[0].closed:
            raise LeaseLostError(lease.session_id)
        return held[0]

    def renew_lease(self, lease: Lease) -> None:
        """Checks the lease's connection still holds the lock (the server keeps it as long as the connection
        lives) and pushes its row's `expires` on, for whoever reads it."""
        conn = self._lease_conn(lease)
        try:
            conn.execute(
                "UPDATE session_leases SET expires = (extract(epoch FROM now()) * 1000)::bigint + %s "
                "WHERE session_id = %s AND token = %s",
                (self.lease_ttl_ms, lease.session_id, lease.token),
            )
        except psycopg.OperationalError:
            raise LeaseLostError(lease.session_id) from None

    def release_lease(self, lease: Lease) -> None:
        """Unlocks, forgets the row and closes the lease's connection."""
        with self._leases_lock:
            held = self._leases.pop(lease.token, None)
        if held is None:
            return
        conn, key = held
        try:
            conn.execute(
                "DELETE FROM session_leases WHERE session_id = %s AND token = %s",
                (lease.session_id, lease.token),
            )
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except psycopg.OperationalError:
            # the connection is gone (server restart, network): so is the lock, which lived on it, and the next
            # holder overwrites the row; raising here would only hide why the writer stopped
            pass
        finally:
            conn.close()  # closing alone releases the lock too: the server drops a session's locks with it

    @_reconnecting
    def lease_holder(self, session_id: str) -> Lease | None:
        """Only while a writer's connection holds the lock: a killed writer's row, left behind, names no
        holder."""
        row = self._one(
            "SELECT l.pid, l.host, l.since, l.expires, l.token FROM session_leases AS l "
            f"CROSS JOIN (SELECT {_LEASE_KEY} AS key) AS k WHERE l.session_id = %s AND EXISTS ("
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
            "AND classid::bigint = (k.key >> 32) & 4294967295 AND objid::bigint = k.key & 4294967295)",
            (session_id, session_id),
        )
        return None if row is None else lease_of(session_id, row)

    def wait_for_events(self, session_id: str, length: int, timeout: float) -> None:
        """LISTENs on `dsh_events` for the session's notification."""
        if self._listener is None:
            self._listener = self.connect()
            self._listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(_CHANNEL)))
        if self.length(session_id) > length:
            return
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            for note in self._listener.notifies(timeout=left, stop_after=1):
                if note.payload == session_id:
                    return

    # ------------------------------------------------------------ fork (the checks are `StoreBase.fork`'s)

    @_reconnecting
    def _last_turn_bound(self, owner: str, low: int, high: int) -> tuple[int, str] | None:
        row = self._one(
            "SELECT seq, type FROM events WHERE session_id = %s AND seq >= %s AND seq < %s "
            "AND type IN ('turn/start', 'turn/end') ORDER BY seq DESC LIMIT 1",
            (owner, low, high),
        )
        return None if row is None else (int(row[0]), str(row[1]))


def _copy(conn: psycopg.Connection[Any], rows: list[EventRow]) -> None:
    with conn.cursor().copy(_COPY) as copy:
        for row in rows:
            copy.write_row(row)


def _in_use(conn: psycopg.Connection[Any], session_id: str) -> SessionInUseError:
    """The refusal naming the lease's holder. The holder names itself just after taking the lock, so a refusal in
    that instant waits briefly for the row."""
    for _ in range(50):
        row = conn.execute(
            "SELECT pid, host, since, expires, token FROM session_leases WHERE session_id = %s", (session_id,)
        ).fetchone()
        if row is not None:
            return lease_of(session_id, row).in_use()
        time.sleep(0.01)
    # the holder took the lock but has not named itself within half a second (or died doing so): say so
    return SessionInUseError(
        session_id, pid=0, host="an unnamed host", since=datetime.fromtimestamp(0, tz=UTC)
    )
