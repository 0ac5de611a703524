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
from ._rules import SurfaceFold, SurfaceNode, message_json

__all__ = ["PROJECTED_TYPES", "ProjectedMessage", "Projection", "project"]

PROJECTED_TYPES = SURFACE_TYPES | {"request/header", "todo/write", "session/title"}
_MESSAGE = msgspec.json.Decoder(Message)
_HEADER = msgspec.json.Decoder(RequestHeaderData)
_TODOS = msgspec.json.Decoder(TodoWriteData)
_TITLE = msgspec.json.Decoder(SessionTitleData)


class _Content(msgspec.Struct):
    content: list[msgspec.Raw]


class _ContentOf(msgspec.Struct):
    message: _Content


_CONTENT_OF = msgspec.json.Decoder(_ContentOf)


@dataclass(frozen=True, slots=True)
class ProjectedMessage:
    """One message of the projection: the event that holds it (seq, type) and that event's data as written; the
    message is extracted from it on demand."""

    seq: int
    type: str
    data: str

    @property
    def json(self) -> str:
        """The message JSON text, exactly as written."""
        return message_json(self.type, self.data)

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
        """The size of the projected messages as JSON text (UTF-8 bytes)."""
        return sum(len(m.json.encode()) for m in self.messages)


def _visible(node: SurfaceNode) -> bool:
    if node.type != "assistant/message":
        return True
    return bool(_CONTENT_OF.decode(node.data).message.content)  # Raw slices: no copy of the message


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
    messages = tuple(ProjectedMessage(n.seq, n.type, n.data) for n in surface.nodes if _visible(n))
    return Projection(messages, header, header_json, todos, title, surface.replacements)


class _HeaderField(msgspec.Struct):
    header: msgspec.Raw
