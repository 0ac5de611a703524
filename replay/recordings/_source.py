"""Where a recorded log comes from: a JSONL file (dsh's format or the original's) or a session of a `SessionStore`.

A `RecordedLog` is the log's header facts (`LogInfo`) and a way to walk its events in seq order, each with the line
it was read from, so every error can name `file:line` (or `session ID seq N` for a stored session).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from dsh.runtime.agent import AgentState
from dsh.runtime.jsonlines import JsonLineError, read_lines
from dsh.runtime.session import LogFormatError, SessionStoreProtocol, SpawnedBy, StoredEvent, read_jsonl

__all__ = ["LogInfo", "RecordedLog", "read_log", "stored_log"]


@dataclass(frozen=True, slots=True)
class LogInfo:
    """A recorded log's header facts. `seed_length` is 0 for a log that inherited nothing; `name` is the file
    path, or `session ID` for a stored session."""

    id: str
    name: str
    created_at: int
    parent_id: str | None = None
    seed_length: int = 0
    spawned_by: SpawnedBy | None = None


Located = tuple[StoredEvent, int | None]


class RecordedLog:
    """A recorded log: `info`, and `events()` walking every event (the inherited prefix included) with its 1-based
    line number (None for a stored session). Each walk reads the source again."""

    __slots__ = ("_walk", "info")

    def __init__(self, info: LogInfo, walk: Callable[[], Iterator[Located]]) -> None:
        self.info = info
        self._walk = walk

    def events(self) -> Iterator[Located]:
        return self._walk()

    def place(self, event: StoredEvent, line: int | None) -> str:
        """Where an event is, for messages: `file:line`, or `session ID seq N`."""
        return f"{self.info.name}:{line}" if line is not None else f"{self.info.name} seq {event.seq}"

    def __repr__(self) -> str:
        return f"RecordedLog({self.info.name!r})"


class _Lines:
    """The lines of a file, counting them (the JSONL reader consumes a line, then yields its events); a line past
    import's limit is refused by number before it is read whole."""

    __slots__ = ("_handle", "_name", "number")

    def __init__(self, handle: BinaryIO, name: str) -> None:
        self._handle = handle
        self._name = name
        self.number = 0

    def __iter__(self) -> Iterator[bytes]:
        try:
            for raw in read_lines(self._handle):
                self.number += 1
                yield raw
        except JsonLineError as error:
            raise LogFormatError(error.reason, rule=error.rule, line=error.line, file=self._name) from None


def read_log(path: str | Path) -> RecordedLog:
    """A JSONL log (format version 0). The header is read now (a bad one raises `LogFormatError`); the events on
    each walk, checked line by line against the log's rules as `dsh.runtime.session.read_jsonl` checks them."""
    path = Path(path)
    name = str(path)
    with path.open("rb") as handle:
        parsed, _ = read_jsonl(_Lines(handle, name), file=name)
    header = parsed.header
    info = LogInfo(
        id=header.id,
        name=name,
        created_at=header.created_at,
        parent_id=header.parent_session,
        seed_length=header.seed_length or 0,
        spawned_by=parsed.spawned_by,
    )

    def walk() -> Iterator[Located]:
        with path.open("rb") as handle:
            lines = _Lines(handle, name)
            _, events = read_jsonl(lines, file=name, folds=(AgentState(),))
            for event in events:
                yield event, lines.number

    return RecordedLog(info, walk)


def stored_log(store: SessionStoreProtocol, session_id: str) -> RecordedLog:
    """A session of the store (a fork child's inherited prefix included, as the store reads it)."""
    stored = store.info(session_id)
    info = LogInfo(
        id=stored.id,
        name=f"session {stored.id}",
        created_at=stored.created_at,
        parent_id=stored.parent_id,
        seed_length=stored.seed_length or 0,
        spawned_by=stored.spawned_by,
    )

    def walk() -> Iterator[Located]:
        for event in store.events(session_id):
            yield event, None

    return RecordedLog(info, walk)
