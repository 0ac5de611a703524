"""`StoreBase`: what every session store does the same way above its SQL, and the values they all return
(`SessionInfo`, `SpawnedBy`, `Lease`); how those values become rows is `_rows`'s.

A new session's and a fork child's `SessionInfo` (ids and clock drawn from the parent, the fork's boundary checks),
a session's own clock and id minter, its last event, a log's segments, and a new lease. A backend subclasses
`StoreBase` and supplies only its queries, connections and transactions (the abstract methods); no SQL lives here.
What each method promises is `SessionStoreProtocol`'s (`_protocol`) to say.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator
from datetime import UTC, datetime
from typing import Self

import msgspec

from .._errors import InvalidBoundaryError, OpenTurnError, SessionExistsError, SessionInUseError
from .._events import Event, StoredEvent, TurnStart
from .._services import Clock, IdMinter, SessionId, SystemClock, UuidIds

__all__ = [
    "LEASE_TTL_MS",
    "Lease",
    "SessionInfo",
    "SpawnedBy",
    "StoreBase",
    "new_lease",
    "segments",
]


LEASE_TTL_MS = 30_000
"""How long a lease outlives its holder's last renewal (the log renews it every third of this while it is open)."""


class SpawnedBy(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The tool call of the parent that spawned a child session."""

    turn: int
    step: int
    call_id: str


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One row of `sessions`. `inherits`: events [0, seed_length) are read from `parent_id` by reference."""

    id: SessionId
    created_at: int
    cwd: str | None = None
    parent_id: str | None = None
    seed_length: int | None = None
    inherits: bool = False
    delegation_depth: int = 0
    spawned_by: SpawnedBy | None = None
    imported_from: str | None = None
    header_extra: str | None = None


class Lease(msgspec.Struct, frozen=True, kw_only=True):
    """A process's hold on one session: who (pid on host), since and until when (ms since the epoch, wall clock),
    and the token that tells its holder's writes from any other's."""

    session_id: str
    pid: int
    host: str
    since: int
    expires: int
    token: str

    def in_use(self) -> SessionInUseError:
        """The refusal of a process that finds this lease held."""
        since = datetime.fromtimestamp(self.since / 1000, tz=UTC)
        return SessionInUseError(self.session_id, pid=self.pid, host=self.host, since=since)


def new_lease(session_id: str, *, now: int, ttl_ms: int) -> Lease:
    """This process's lease on `session_id` from `now` (ms, the backend's wall clock), with a fresh token."""
    import secrets  # leases only (with socket): a store that is only read never imports them
    import socket

    return Lease(
        session_id=session_id,
        pid=os.getpid(),
        host=socket.gethostname(),
        since=now,
        expires=now + ttl_ms,
        token=secrets.token_hex(16),
    )


def segments(
    chain: Iterable[tuple[str, str | None, int | None, int]], stop: int | None
) -> list[tuple[str, int, int | None]]:
    """The (session, from seq, to seq exclusive) pieces of a full log up to `stop`, oldest first, from its chain of
    (id, parent_id, seed_length, inherits as a bool or its 0/1 column), nearest first. The chain is read only as far
    as the log inherits."""
    pieces: list[tuple[str, int, int | None]] = []
    upper = stop
    for current, parent, seed, inherits in chain:
        if not inherits or parent is None:
            pieces.append((current, 0, upper))
            break
        pieces.append((current, seed or 0, upper))
        upper = (seed or 0) if upper is None else min(seed or 0, upper)
    pieces.reverse()
    return pieces


class StoreBase(ABC):
    """The backend-independent half of a session store (see the module docstring); `SessionStoreProtocol` is the
    contract the whole keeps."""

    clock: Clock
    ids: IdMinter
    lease_ttl_ms: int

    def __init__(self, *, clock: Clock | None, ids: IdMinter | None, lease_ttl_ms: int) -> None:
        self.lease_ttl_ms = lease_ttl_ms
        self.clock = clock or SystemClock()
        self.ids = ids or UuidIds()

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ what a backend supplies

    @abstractmethod
    def info(self, session_id: str) -> SessionInfo: ...

    @abstractmethod
    def length(self, session_id: str) -> int: ...

    @abstractmethod
    def events(
        self,
        session_id: str,
        *,
        start: int = 0,
        stop: int | None = None,
        types: Collection[str | type[Event]] | None = None,
        skip_types: Collection[str | type[Event]] | None = None,
    ) -> Iterator[StoredEvent]: ...

    @abstractmethod
    def _segments(self, session_id: str, stop: int | None) -> list[tuple[str, int, int | None]]:
        """(session, from seq, to seq exclusive) pieces of the full log, oldest first (built by `segments`)."""

    @abstractmethod
    def _has_session(self, session_id: str) -> bool: ...

    @abstractmethod
    def _add_session(self, info: SessionInfo) -> None:
        """Insert the session in a transaction of its own (`SessionExistsError` if its id is taken)."""

    @abstractmethod
    def _last_turn_bound(self, owner: str, low: int, high: int) -> tuple[int, str] | None:
        """The (seq, type) of `owner`'s last `turn/start` or `turn/end` with low <= seq < high, or None."""

    # ------------------------------------------------------------ sessions

    def create(
        self,
        *,
        cwd: str | None = None,
        parent_id: str | None = None,
        delegation_depth: int = 0,
        spawned_by: SpawnedBy | None = None,
        session_id: SessionId | None = None,
    ) -> SessionInfo:
        ids = self.ids if parent_id is None else self.session_ids(parent_id)
        clock = self.clock if parent_id is None else self.session_clock(parent_id)
        info = SessionInfo(
            id=session_id or ids.new_session_id(),
            created_at=clock.now_ms(),
            cwd=cwd,
            parent_id=parent_id,
            delegation_depth=delegation_depth,
            spawned_by=spawned_by,
        )
        self._add_session(info)
        return info

    def session_clock(self, session_id: str) -> Clock:
        info = self.info(session_id)
        last = self.last_event(session_id)
        after = info.created_at if last is None else max(info.created_at, last.time)
        return self.clock.for_session(session_id, after=after)

    def session_ids(self, session_id: str) -> IdMinter:
        return self.ids.for_session(session_id, start=self.length(session_id))

    def last_event(self, session_id: str) -> StoredEvent | None:
        length = self.length(session_id)
        if length == 0:
            return None
        return next(self.events(session_id, start=length - 1), None)

    # ------------------------------------------------------------ fork

    def fork(
        self,
        session_id: str,
        at: int | None = None,
        *,
        child_id: SessionId | None = None,
        delegation_depth: int | None = None,
        spawned_by: SpawnedBy | None = None,
    ) -> SessionInfo:
        """The boundary checks on the parent's segments (`_last_turn_bound`), then one `sessions` row."""
        if child_id is not None and self._has_session(child_id):
            raise SessionExistsError(child_id)
        parent = self.info(session_id)
        length = self.length(session_id)
        boundary = length - 1 if at is None else at
        if at is not None and not 0 <= at < length:
            raise InvalidBoundaryError(session_id, at, length)
        if boundary >= 0:
            opened = self._open_turn_at(session_id, boundary)
            if opened is not None:
                raise OpenTurnError(session_id, boundary, opened)
        child = SessionInfo(
            id=child_id or self.session_ids(parent.id).new_session_id(),
            created_at=self.session_clock(parent.id).now_ms(),
            cwd=parent.cwd,
            parent_id=parent.id,
            seed_length=boundary + 1,
            inherits=True,
            delegation_depth=parent.delegation_depth if delegation_depth is None else delegation_depth,
            spawned_by=spawned_by,
        )
        self._add_session(child)
        return child

    def _open_turn_at(self, session_id: str, boundary: int) -> int | None:
        """The seq of the `turn/start` the prefix 0..boundary ends inside, or None."""
        for owner, low, high in reversed(self._segments(session_id, boundary + 1)):
            bound = self._last_turn_bound(owner, low, boundary + 1 if high is None else high)
            if bound is not None:
                return int(bound[0]) if bound[1] == TurnStart.TAG else None
        return None
