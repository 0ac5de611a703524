"""Projection: the log folded into what a request is built from: the message list (the surface fold), the latest
request header, the todos and the title. It streams: only surface nodes and the latest folds stay in memory."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from ._events import (
    SURFACE_TYPES,
    EpochHeader,
    Message,
    RequestHeaderData,
    SessionTitleData,
    StoredEvent,
    Todo,
    TodoWriteData,
)
from ._rules import SurfaceFold, SurfaceNode

__all__ = ["PROJECTED_TYPES", "ProjectedMessage", "Projection", "project"]

PROJECTED_TYPES = SURFACE_TYPES | {"request/header", "todo/write", "session/title"}
_MESSAGE = msgspec.json.Decoder(Message)
_HEADER = msgspec.json.Decoder(RequestHeaderData)
_TODOS = msgspec.json.Decoder(TodoWriteData)
_TITLE = msgspec.json.Decoder(SessionTitleData)


@dataclass(frozen=True, slots=True)
class ProjectedMessage:
    """One message of the projection: the seq of the event that holds it, and the message JSON as written."""

    seq: int
    type: str
    json: str

    def view(self) -> Message:
        """The typed view of the message."""
        return _MESSAGE.decode(self.json)


@dataclass(frozen=True, slots=True)
class Projection:
    """The folds of a log: `messages` in surface order (empty assistant messages skipped), the latest request
    header (its typed view and its JSON as written), the latest todos and title."""

    messages: tuple[ProjectedMessage, ...]
    header: EpochHeader | None
    header_json: str | None
    todos: tuple[Todo, ...] | None
    title: str | None
    replacements: int

    def message_bytes(self) -> int:
        """The size of the projected messages as JSON text."""
        return sum(len(m.json) for m in self.messages)


def _visible(node: SurfaceNode) -> bool:
    if node.type != "assistant/message":
        return True
    return bool(_MESSAGE.decode(node.message).content)


def project(events: Iterable[StoredEvent]) -> Projection:
    """Fold `events` (a full log in seq order, or only its `PROJECTED_TYPES`) into a `Projection`."""
    surface = SurfaceFold()
    header: EpochHeader | None = None
    header_json: str | None = None
    todos: tuple[Todo, ...] | None = None
    title: str | None = None
    for event in events:
        kind = event.type
        if event.surface_op is not None and kind in SURFACE_TYPES:
            surface.apply(event)
        elif kind == "request/header":
            data = _HEADER.decode(event.data)
            header = data.header
            header_json = bytes(msgspec.json.decode(event.data, type=_HeaderField).header).decode()
        elif kind == "todo/write":
            todos = _TODOS.decode(event.data).todos
        elif kind == "session/title":
            title = _TITLE.decode(event.data).title
    messages = tuple(ProjectedMessage(n.seq, n.type, n.message) for n in surface.nodes if _visible(n))
    return Projection(messages, header, header_json, todos, title, surface.replacements)


class _HeaderField(msgspec.Struct):
    header: msgspec.Raw
