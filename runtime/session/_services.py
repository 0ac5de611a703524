"""The clock and the id minter the session log takes its time and ids from, so a replayed run is deterministic."""

from __future__ import annotations

import time
import uuid
from typing import NewType, Protocol

__all__ = ["Clock", "CountingIds", "FixedClock", "IdMinter", "SessionId", "SystemClock", "UuidIds"]

SessionId = NewType("SessionId", str)


class Clock(Protocol):
    """Epoch milliseconds; the log's `time` field and `createdAt` come from here."""

    def now_ms(self) -> int: ...


class IdMinter(Protocol):
    """Mints session ids and the ids of the messages, retries and compactions logged in them."""

    def new_session_id(self) -> SessionId: ...

    def new_id(self, kind: str) -> str:
        """A fresh id for a `kind` of record (`message`, `retry`, `compaction`, ...)."""
        ...


class SystemClock:
    """The wall clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class UuidIds:
    """Random UUID4 session ids."""

    def new_session_id(self) -> SessionId:
        return SessionId(str(uuid.uuid4()))

    def new_id(self, kind: str) -> str:
        return str(uuid.uuid4())


class FixedClock:
    """A clock that says `start`, then advances by `step` on every reading (replay and tests)."""

    def __init__(self, start: int = 0, step: int = 0) -> None:
        self._now = start
        self._step = step

    def now_ms(self) -> int:
        now = self._now
        self._now += self._step
        return now


class CountingIds:
    """Deterministic ids: sessions `<prefix>-1`, `<prefix>-2`, ...; other records `<kind>-1`, ... counted per kind
    (replay and tests)."""

    def __init__(self, prefix: str = "session") -> None:
        self._prefix = prefix
        self._count = 0
        self._kinds: dict[str, int] = {}

    def new_session_id(self) -> SessionId:
        self._count += 1
        return SessionId(f"{self._prefix}-{self._count}")

    def new_id(self, kind: str) -> str:
        count = self._kinds[kind] = self._kinds.get(kind, 0) + 1
        return f"{kind}-{count}"
