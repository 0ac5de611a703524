"""`follow`: a session's events as another process appends them, read from any store: the store wakes the reader
(`wait_for_events`: LISTEN/NOTIFY on PostgreSQL, the WAL file's changes on SQLite) and the reader re-reads from the
last seq it saw, so a missed or spurious wake-up costs a query, never an event."""

from __future__ import annotations

from collections.abc import Iterator

from ._events import StoredEvent, TurnEnd, TurnStart
from .store._protocol import SessionStoreProtocol

__all__ = ["follow", "tail_start"]


def tail_start(store: SessionStoreProtocol, session_id: str) -> int:
    """Where a tail begins by default: the open last turn's `turn/start`, or the end of the log."""
    last: StoredEvent | None = None
    for bound in store.events(session_id, types=(TurnStart, TurnEnd)):
        last = bound
    if last is not None and last.type == TurnStart.TAG:
        return last.seq
    return store.length(session_id)


def follow(
    store: SessionStoreProtocol,
    session_id: str,
    *,
    start: int | None = None,
    until_turn_end: bool = True,
    wait: float = 1.0,
) -> Iterator[StoredEvent]:
    """The session's events from seq `start` (default `tail_start`) on, as they are committed; with
    `until_turn_end` it stops after the first `turn/end` it yields, otherwise it runs until the caller stops."""
    store.info(session_id)  # an unknown session is refused now, not after the first wait
    next_seq = tail_start(store, session_id) if start is None else start
    while True:
        for event in store.events(session_id, start=next_seq):
            yield event
            next_seq = event.seq + 1
            if until_turn_end and event.type == TurnEnd.TAG:
                return
        store.wait_for_events(session_id, next_seq, timeout=wait)
