"""`copy_sessions`: moving sessions between any two stores (SQLite <-> PostgreSQL, or alike), keeping their ids,
their rows as they are (fork links, `seed_length`, `spawned_by`, `imported_from`) and only their own events: a fork
child stays a reference to its parent, which is copied first."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .._errors import SessionExistsError
from ._base import SessionInfo
from ._protocol import SessionStoreProtocol

__all__ = ["copy_plan", "copy_sessions", "own_events"]


def copy_plan(source: SessionStoreProtocol, session_ids: Iterable[str] | None = None) -> list[SessionInfo]:
    """The sessions to copy, each after the parent it inherits events from: every session of `source`, or those
    named with the ancestors their logs read by reference."""
    everything = source.sessions()
    by_id: dict[str, SessionInfo] = {info.id: info for info in everything}
    wanted = list(by_id) if session_ids is None else [source.info(sid).id for sid in session_ids]
    ordered: list[SessionInfo] = []
    placed: set[str] = set()

    def place(session_id: str) -> None:
        if session_id in placed:
            return
        placed.add(session_id)
        info = by_id[session_id]
        if info.inherits and info.parent_id is not None and info.parent_id in by_id:
            place(info.parent_id)
        ordered.append(info)

    for session_id in wanted:
        place(session_id)
    return ordered


def _own_length(store: SessionStoreProtocol, info: SessionInfo) -> int:
    """How many events the session stores itself (a fork's inherited prefix is its parent's)."""
    seed = (info.seed_length or 0) if info.inherits else 0
    return store.length(info.id) - seed


def copy_sessions(
    source: SessionStoreProtocol,
    target: SessionStoreProtocol,
    sessions: list[SessionInfo],
    *,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Copy `sessions` (a `copy_plan`) from `source` into `target`, one transaction per session; returns the number
    of events copied. A session id `target` already holds is refused before anything is copied."""
    taken = {info.id for info in target.sessions()}
    for info in sessions:
        if info.id in taken:
            raise SessionExistsError(info.id)
    copied = 0
    for info in sessions:
        start = (info.seed_length or 0) if info.inherits else 0
        target.import_session(info, source.events(info.id, start=start))
        copied += _own_length(target, info)
        if progress is not None:
            progress(copied)
    return copied


def own_events(source: SessionStoreProtocol, sessions: list[SessionInfo]) -> int:
    """The number of events `copy_sessions` will copy (for a progress bar's total)."""
    return sum(_own_length(source, info) for info in sessions)
