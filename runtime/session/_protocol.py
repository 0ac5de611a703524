"""`SessionStoreProtocol`: the contract every session store keeps (SQLite's `SessionStore`, PostgreSQL's `PgStore`),
and `EventWriter`, the leased append path one writer holds for one session.

The agent loop, projection, fork, repair, import/export, replay and the CLI use only these names, so a store is
chosen once, where the host opens it (`open_store`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Protocol, Self

from runtime.kernel import ServiceKey

from ._events import StoredEvent
from ._services import Clock, IdMinter, SessionId
from ._store import EventRow, SessionInfo, SpawnedBy

__all__ = ["STORE", "EventWriter", "SessionStoreProtocol"]


class EventWriter(Protocol):
    """One session's append path while its writer holds the session's lease (`SessionStoreProtocol.open_writer`).

    `insert_rows` commits prepared rows in one transaction (one round trip where the backend allows it): the
    group-commit writer calls it off the event loop. `close` releases the lease."""

    def insert_rows(self, rows: list[EventRow]) -> None: ...

    def close(self) -> None: ...


class SessionStoreProtocol(Protocol):
    """Sessions and their append-only events. Every method is synchronous and safe to call from several threads;
    the log writer (`open_log`) runs `EventWriter.insert_rows` in a worker thread.

    Guarantees every backend keeps: events are never updated or deleted, each insert is the session's next seq,
    a fork stores only its own events (its prefix is read from its parent by reference), and one writer per
    session holds a lease the store arbitrates (`SessionInUseError` for a second one)."""

    clock: Clock
    ids: IdMinter

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
        types: Collection[str] | None = None,
        skip_types: Collection[str] | None = None,
    ) -> Iterator[StoredEvent]: ...

    def last_event(self, session_id: str) -> StoredEvent | None: ...

    def append_events(self, session_id: str, events: Iterable[StoredEvent]) -> None: ...

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

    def open_writer(self, session_id: str) -> EventWriter:
        """Take the session's lease (or raise `SessionInUseError` naming its holder) and return its append path."""
        ...

    def wait_for_events(self, session_id: str, length: int, timeout: float) -> None:
        """Block until the session may hold more than `length` events, or `timeout` seconds pass (a wake-up is a
        hint: the caller re-reads). Used by `dsh sessions tail`."""
        ...


STORE = ServiceKey[SessionStoreProtocol]("session-store")
"""The store agents log to. The host (the `dsh` command, a test, an embedding application) provides it on the root
context before loading a deployment: where sessions live (a SQLite file or a PostgreSQL database), and the clock and
ids they are stamped with, are the host's choice, not a deployment's."""
