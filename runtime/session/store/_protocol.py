"""`SessionStoreProtocol`: the contract every session store keeps (SQLite's `SessionStore`, PostgreSQL's `PgStore`),
leases and the group-commit writer's path included, documented here once; `STORE`, the service key agents log to.

The agent loop, projection, fork, repair, import/export, replay and the CLI use only these names, so a store is
chosen once, where the host opens it (`open_store`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any, Protocol, Self

from dsh.runtime.kernel import ServiceKey

from .._events import Event, StoredEvent
from .._services import Clock, IdMinter, SessionId
from ._base import Lease, SessionInfo, SpawnedBy
from ._rows import EventRow

__all__ = ["STORE", "SessionStoreProtocol"]


class SessionStoreProtocol(Protocol):
    """Sessions and their append-only events: the contract, written once here. The backends (`sqlite.SessionStore`,
    `pg.PgStore`) document only how they differ. Every method is synchronous and safe to call from several threads;
    the log writer (`open_log`) runs `insert_rows` and `renew_lease` in worker threads.

    Guarantees every backend keeps: events are never updated or deleted, each insert is the session's next seq,
    a fork stores only its own events (its prefix is read from its parent by reference), and one writer per
    session holds a lease the store arbitrates (`SessionInUseError` for a second one). A read of a session the store
    does not hold raises `SessionNotFoundError`; a read that meets a gap in a stored log raises `LogGapError`, one
    that meets a row dsh would not write `StoreRowError`, each naming the store, the session and the seq."""

    clock: Clock
    """The clock sessions are stamped with (each session reads its own view: `session_clock`)."""
    ids: IdMinter
    """Where new sessions' and records' ids come from (each session draws its own: `session_ids`)."""
    lease_ttl_ms: int
    """How often a lease holder must renew (the log renews every third of it)."""

    @property
    def location(self) -> str:
        """Where the store lives, printable (a path, or a URL without its password)."""
        ...

    def close(self) -> None:
        """Let go of the store's connections (a lease still held ends with them)."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None:
        """`close()`."""
        ...

    def schema_version(self) -> int:
        """The version of the schema the store holds (each backend migrates an older one when it opens)."""
        ...

    def create(
        self,
        *,
        cwd: str | None = None,
        parent_id: str | None = None,
        delegation_depth: int = 0,
        spawned_by: SpawnedBy | None = None,
        session_id: SessionId | None = None,
    ) -> SessionInfo:
        """A new, empty session (`session_id`, or a fresh id; `SessionExistsError` if it is taken). A child's id and
        `createdAt` come from its parent's view of the clock and ids."""
        ...

    def session_clock(self, session_id: str) -> Clock:
        """The clock `session_id` reads (`Clock.for_session`): its events' times and its children's `createdAt`,
        continuing after the session's latest time."""
        ...

    def session_ids(self, session_id: str) -> IdMinter:
        """The minter `session_id` draws from (`IdMinter.for_session`): its records' ids and its children's,
        counting on from its log's length."""
        ...

    def info(self, session_id: str) -> SessionInfo:
        """The session's row."""
        ...

    def sessions(self) -> list[SessionInfo]:
        """Every session, oldest first (by `created_at`, then id)."""
        ...

    def children(self, session_id: str) -> list[SessionInfo]:
        """The sessions whose parent is `session_id` (forks and subagents), oldest first. An imported child names
        its parent by the id it had in its file, so a parent imported from that file (`imported_from`) claims it."""
        ...

    def length(self, session_id: str) -> int:
        """The number of events in the session's full log (its inherited prefix included)."""
        ...

    def events(
        self,
        session_id: str,
        *,
        start: int = 0,
        stop: int | None = None,
        types: Collection[str | type[Event]] | None = None,
        skip_types: Collection[str | type[Event]] | None = None,
    ) -> Iterator[StoredEvent]:
        """The session's full log in seq order (the inherited prefix first), seqs `start` to `stop` (exclusive),
        streamed in pages: an abandoned iterator holds no connection or snapshot. `types` keeps only those types,
        `skip_types` drops those (event classes or wire tags, both filtered by the database)."""
        ...

    def last_event(self, session_id: str) -> StoredEvent | None:
        """The session's last event (an inherited one for a fork with none of its own), or None for an empty log."""
        ...

    def append_events(
        self, session_id: str, events: Iterable[StoredEvent], *, lease: Lease | None = None
    ) -> None:
        """Insert events in one transaction (the caller has checked them against the log's rules); with `lease`,
        only while it is still the caller's (`SessionInUseError` or `LeaseLostError` otherwise)."""
        ...

    def connect(self) -> Any:
        """A connection of the writer's own (a `sqlite3` or `psycopg` connection: the store takes back only the
        ones it made, in `insert_rows`)."""
        ...

    def insert_rows(self, conn: Any, rows: list[EventRow], *, lease: Lease | None = None) -> None:
        """Commit prepared rows (`_rows.event_row`) in one transaction on `conn` (the group-commit writer's path);
        with `lease`, only while it is still the caller's (`SessionInUseError` naming the holder that took it over,
        or `LeaseLostError`)."""
        ...

    def import_session(self, info: SessionInfo, events: Iterable[StoredEvent]) -> SessionInfo:
        """Create the session `info` describes, as it is (its id, fork link and `seed_length` kept), and insert its
        own events in one transaction; if `events` raises, nothing is kept."""
        ...

    def fork(
        self,
        session_id: str,
        at: int | None = None,
        *,
        child_id: SessionId | None = None,
        delegation_depth: int | None = None,
        spawned_by: SpawnedBy | None = None,
    ) -> SessionInfo:
        """A child session whose log starts with the parent's events 0..`at` (inclusive, default: all), by
        reference: no event is copied. Its own events continue at seq `at + 1` (its `seed_length`). `at` must be an
        existing seq (`InvalidBoundaryError`) that does not end inside an open turn (`OpenTurnError`).

        A plain fork keeps the parent's delegation depth. A delegated fork (a subagent) passes its own depth
        (the parent's + 1) and `spawned_by`, the parent's tool call that started it."""
        ...

    def acquire_lease(self, session_id: str) -> Lease:
        """Take the session's lease (one writer per session) or raise `SessionInUseError` naming its holder. A lease
        is taken over only when its holder is provably gone."""
        ...

    def renew_lease(self, lease: Lease) -> None:
        """Keep the lease (`SessionInUseError` or `LeaseLostError` if it is no longer the caller's)."""
        ...

    def release_lease(self, lease: Lease) -> None:
        """Give the lease back (a no-op if it was already lost)."""
        ...

    def lease_holder(self, session_id: str) -> Lease | None:
        """The lease on `session_id`, if a writer holds one."""
        ...

    def wait_for_events(self, session_id: str, length: int, timeout: float) -> None:
        """Block until the session may hold more than `length` events, or `timeout` seconds pass (a wake-up is a
        hint: the caller re-reads). Used by `dsh sessions tail`."""
        ...


STORE = ServiceKey[SessionStoreProtocol]("session-store")
"""The store agents log to. The host (the `dsh` command, a test, an embedding application) provides it on the root
context before loading a deployment: where sessions live (a SQLite file or a PostgreSQL database), and the clock and
ids they are stamped with, are the host's choice, not a deployment's."""
