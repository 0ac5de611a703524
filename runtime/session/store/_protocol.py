"""`SessionStoreProtocol`: the contract every session store keeps (SQLite's `SessionStore`, PostgreSQL's `PgStore`),
leases and the group-commit writer's path included.

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
    """Sessions and their append-only events. Every method is synchronous and safe to call from several threads;
    the log writer (`open_log`) runs `insert_rows` and `renew_lease` in worker threads.

    Guarantees every backend keeps: events are never updated or deleted, each insert is the session's next seq,
    a fork stores only its own events (its prefix is read from its parent by reference), and one writer per
    session holds a lease the store arbitrates (`SessionInUseError` for a second one)."""

    clock: Clock
    ids: IdMinter
    lease_ttl_ms: int
    """How often a lease holder must renew (the log renews every third of it)."""

    @property
    def location(self) -> str:
        """Where the store lives, printable (a path, or a URL without its password)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

    def schema_version(self) -> int: ...

    def create(
        self,
        *,
        cwd: str | None = None,
        parent_id: str | None = None,
        delegation_depth: int = 0,
        spawned_by: SpawnedBy | None = None,
        session_id: SessionId | None = None,
    ) -> SessionInfo: ...

    def session_clock(self, session_id: str) -> Clock: ...

    def session_ids(self, session_id: str) -> IdMinter: ...

    def info(self, session_id: str) -> SessionInfo: ...

    def sessions(self) -> list[SessionInfo]: ...

    def children(self, session_id: str) -> list[SessionInfo]: ...

    def length(self, session_id: str) -> int: ...

    def events(
        self,
        session_id: str,
        *,
        start: int = 0,
        stop: int | None = None,
        types: Collection[str | type[Event]] | None = None,
        skip_types: Collection[str | type[Event]] | None = None,
    ) -> Iterator[StoredEvent]: ...

    def last_event(self, session_id: str) -> StoredEvent | None: ...

    def append_events(
        self, session_id: str, events: Iterable[StoredEvent], *, lease: Lease | None = None
    ) -> None: ...

    def connect(self) -> Any:
        """A connection of the writer's own (a `sqlite3` or `psycopg` connection: the store takes back only the
        ones it made, in `insert_rows`)."""
        ...

    def insert_rows(self, conn: Any, rows: list[EventRow], *, lease: Lease | None = None) -> None:
        """Commit prepared rows in one transaction (one COPY on PostgreSQL); with `lease`, only while it is still
        the caller's (`SessionInUseError` or `LeaseLostError` otherwise)."""
        ...

    def import_session(self, info: SessionInfo, events: Iterable[StoredEvent]) -> SessionInfo: ...

    def fork(
        self,
        session_id: str,
        at: int | None = None,
        *,
        child_id: SessionId | None = None,
        delegation_depth: int | None = None,
        spawned_by: SpawnedBy | None = None,
    ) -> SessionInfo: ...

    def acquire_lease(self, session_id: str) -> Lease:
        """Take the session's lease (one writer per session) or raise `SessionInUseError` naming its holder."""
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
