"""The clock and the id minter the session log takes its time and ids from, so a replayed run is deterministic.

Each session reads a view of its own (`for_session`): the wall clock and random ids are one for all sessions, while
the deterministic ones give every session a sequence of its own. Sessions that run at once (sibling subagents)
then never draw from one another's sequence, so their times and ids do not depend on how they were scheduled."""

from __future__ import annotations

import time
from typing import NewType, Protocol

__all__ = ["Clock", "CountingIds", "FixedClock", "IdMinter", "SessionId", "SystemClock", "UuidIds"]

SessionId = NewType("SessionId", str)


class Clock(Protocol):
    """Epoch milliseconds; the log's `time` field and `createdAt` come from here."""

    def now_ms(self) -> int: ...

    def for_session(self, session_id: str, *, after: int) -> Clock:
        """The clock `session_id` reads: its events' times and its children's `createdAt`. `after` is the
        session's latest time so far (its `createdAt`, or its last event's time); a deterministic clock continues
        after it, the wall clock ignores it."""
        ...


class IdMinter(Protocol):
    """Mints session ids and the ids of the messages, retries and compactions logged in them."""

    def new_session_id(self) -> SessionId: ...

    def new_id(self, kind: str) -> str:
        """A fresh id for a `kind` of record (`message`, `retry`, `compaction`, ...)."""
        ...

    def for_session(self, session_id: str, *, start: int) -> IdMinter:
        """The minter `session_id` draws from: the ids of its records and of its child sessions. `start` is the
        length of its log (its seed included) when it is first asked for: a deterministic minter counts on from
        there, so a fork child never repeats an id of the prefix it inherits."""
        ...


class SystemClock:
    """The wall clock, one for every session."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def for_session(self, session_id: str, *, after: int) -> SystemClock:
        return self


class UuidIds:
    """Random UUID4 ids, one minter for every session."""

    def new_session_id(self) -> SessionId:
        import uuid  # on first use: uuid imports platform, which a command that only reads never needs

        return SessionId(str(uuid.uuid4()))

    def new_id(self, kind: str) -> str:
        import uuid

        return str(uuid.uuid4())

    def for_session(self, session_id: str, *, start: int) -> UuidIds:
        return self


class FixedClock:
    """A clock that says `start`, then advances by `step` on every reading (replay and tests). Each session reads
    a sequence of its own, from `step` after its latest time, kept for as long as the clock lives."""

    def __init__(self, start: int = 0, step: int = 0) -> None:
        self._now = start
        self._step = step
        self._sessions: dict[str, FixedClock] = {}

    def now_ms(self) -> int:
        now = self._now
        self._now += self._step
        return now

    def for_session(self, session_id: str, *, after: int) -> FixedClock:
        clock = self._sessions.get(session_id)
        if clock is None:
            clock = self._sessions[session_id] = FixedClock(after + self._step, self._step)
        return clock


class CountingIds:
    """Deterministic ids: top-level sessions `<prefix>-1`, `<prefix>-2`, ...; a session's children `<id>.1`,
    `<id>.2`, ...; other records `<kind>-<n>`, counted per kind within each session (from its log's length when it
    is first asked for), so ids are unique within every session's log, and siblings may repeat each other's."""

    def __init__(self, prefix: str = "session", *, separator: str = "-", start: int = 0) -> None:
        self._prefix = prefix
        self._separator = separator
        self._start = start
        self._count = 0
        self._kinds: dict[str, int] = {}
        self._sessions: dict[str, CountingIds] = {}

    def new_session_id(self) -> SessionId:
        self._count += 1
        return SessionId(f"{self._prefix}{self._separator}{self._count}")

    def new_id(self, kind: str) -> str:
        count = self._kinds[kind] = self._kinds.get(kind, self._start) + 1
        return f"{kind}-{count}"

    def for_session(self, session_id: str, *, start: int) -> CountingIds:
        ids = self._sessions.get(session_id)
        if ids is None:
            ids = self._sessions[session_id] = CountingIds(session_id, separator=".", start=start)
            ids._sessions = self._sessions  # one registry: a session's view is the same whoever asks
        return ids
