"""The row codecs both stores read and write through: an event to its `events` row and back, a `SessionInfo` to its
`sessions` row and back, and a `session_leases` row to its `Lease`. Values only, no SQL: SQLite and PostgreSQL hold
the same columns with the same text, so a row one backend wrote reads back equal from the other (`dsh sessions
copy` moves them unchanged)."""

from __future__ import annotations

from typing import Any

import msgspec

from .._events import Replace, StoredEvent, SurfaceOp
from .._services import SessionId
from ._base import Lease, SessionInfo, SpawnedBy

__all__ = [
    "EVENT_COLUMNS",
    "BadRow",
    "EventRow",
    "event_row",
    "lease_of",
    "row_event",
    "row_info",
    "session_row",
]

EventRow = tuple[str, int, str, int, str, str | None, str | None, int | None, str | None]
"""An `events` row as written: session_id, then `EVENT_COLUMNS`."""
EVENT_COLUMNS = "seq, type, time, data, surface_op, source_event_seqs, ignorable, extra"
"""The `events` columns a read selects, in the order `row_event` takes them (a row's session is the caller's)."""

_SEQS = msgspec.json.Decoder(tuple[int, ...])
_REPLACE = msgspec.json.Decoder(Replace)
_SPAWNED = msgspec.json.Decoder(SpawnedBy)


def event_row(session_id: str, event: StoredEvent) -> EventRow:
    """The `events` row of one event."""
    op = event.surface_op
    return (
        session_id,
        event.seq,
        event.type,
        event.time,
        event.data,
        None if op is None else ("append" if op == "append" else msgspec.json.encode(op).decode()),
        None if event.source_event_seqs is None else msgspec.json.encode(event.source_event_seqs).decode(),
        None if event.ignorable is None else int(event.ignorable),
        event.extra,
    )


class BadRow(ValueError):
    """A row `row_event` cannot read as an event (its store names the session and itself in a `StoreRowError`)."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(reason)
        self.seq = seq
        self.reason = reason


def row_event(row: tuple[Any, ...]) -> StoredEvent:
    """The event of a row read as `EVENT_COLUMNS`; `BadRow` if its envelope is not what dsh writes."""
    seq, kind, time, data, op, sources, ignorable, extra = row
    if (
        op is None and sources is None and ignorable is None and extra is None
    ):  # most rows (chunks): no envelope
        return StoredEvent(type=kind, seq=seq, time=time, data=data)
    try:
        surface: SurfaceOp | None = None
        if op is not None:
            surface = "append" if op == "append" else _REPLACE.decode(op)
        return StoredEvent(
            type=kind,
            seq=seq,
            time=time,
            data=data,
            surface_op=surface,
            source_event_seqs=None if sources is None else _SEQS.decode(sources),
            ignorable=None if ignorable is None else bool(ignorable),
            extra=extra,
        )
    except (msgspec.DecodeError, TypeError) as error:
        raise BadRow(
            seq,
            f"surface_op {op!r}, source_event_seqs {sources!r}: {error}; dsh writes surface_op "
            '"append" or {"op":"replace","start":N,"end":N} and source_event_seqs as a JSON list of seqs',
        ) from None


def session_row(info: SessionInfo) -> tuple[object, ...]:
    """The `sessions` row of `info`, in the column order of `SESSION_COLUMNS` (`_listing`): id, created_at, cwd,
    parent_id, seed_length, inherits, delegation_depth, spawned_by, imported_from, header_extra."""
    return (
        info.id,
        info.created_at,
        info.cwd,
        info.parent_id,
        info.seed_length,
        int(info.inherits),
        info.delegation_depth,
        None if info.spawned_by is None else msgspec.json.encode(info.spawned_by).decode(),
        info.imported_from,
        info.header_extra,
    )


def row_info(row: tuple[Any, ...]) -> SessionInfo:
    """The `SessionInfo` of a `sessions` row read as `SESSION_COLUMNS`."""
    sid, created, cwd, parent, seed, inherits, depth, spawned, imported, extra = row
    return SessionInfo(
        id=SessionId(sid),
        created_at=created,
        cwd=cwd,
        parent_id=parent,
        seed_length=seed,
        inherits=bool(inherits),
        delegation_depth=depth,
        spawned_by=None if spawned is None else _SPAWNED.decode(spawned),
        imported_from=imported,
        header_extra=extra,
    )


def lease_of(session_id: str, row: tuple[Any, ...]) -> Lease:
    """The lease of a `session_leases` row read as (pid, host, since, expires, token)."""
    pid, host, since, expires, token = row
    return Lease(session_id=session_id, pid=pid, host=host, since=since, expires=expires, token=token)
