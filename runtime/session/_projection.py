"""Projection: the log folded into what a request is built from: the message list (the surface fold), the latest
request header, the todos and the title. It streams: only surface nodes and the latest folds stay in memory."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from dsh.runtime.llm import Message

from ._events import (
    SURFACE_TYPES,
    AssistantMessageData,
    AssistantMessageEvent,
    EpochHeader,
    RequestHeader,
    SessionTitle,
    StoredEvent,
    Todo,
    TodoWrite,
    ToolResultData,
    decode_data,
)
from ._rules import SurfaceFold, SurfaceNode, _message_of, message_json

__all__ = ["PROJECTED_TYPES", "ProjectedMessage", "Projection", "project"]

PROJECTED_TYPES = SURFACE_TYPES | {RequestHeader.TAG, TodoWrite.TAG, SessionTitle.TAG}


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
    typed: Message | None = None

    @property
    def json(self) -> str:
        """The message JSON text, exactly as written."""
        return message_json(self.type, self.data)

    def view(self) -> Message:
        """The typed message (decoded through the event table when the fold did not have it)."""
        if self.typed is not None:
            return self.typed
        data = decode_data(self.type, self.data, self.seq)
        message: Message = data.message if isinstance(data, AssistantMessageData | ToolResultData) else data
        return message


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
    if node.type != AssistantMessageEvent.TAG:
        return True
    if node.typed is not None:
        return bool(node.typed.content)
    try:
        return bool(_CONTENT_OF.decode(node.data).message.content)  # Raw slices: no copy of the message
    except msgspec.ValidationError:  # an older shape the original still reads: through the event table
        data = decode_data(node.type, node.data, node.seq)
        return bool(data.message.content)


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
            typed = event.typed
            surface.apply(event, None if typed is None else _message_of(typed.data))
        elif kind == RequestHeader.TAG:
            view = event.view()
            assert isinstance(view, RequestHeader), "the event table decodes request/header as RequestHeader"
            header = view.data.header
            header_json = bytes(_HEADER_FIELD.decode(event.data).header).decode()
        elif kind == TodoWrite.TAG:
            todo = event.view()
            assert isinstance(todo, TodoWrite), "the event table decodes todo/write as TodoWrite"
            todos = todo.data.todos
        elif kind == SessionTitle.TAG:
            named = event.view()
            assert isinstance(named, SessionTitle), "the event table decodes session/title as SessionTitle"
            title = named.data.title
    messages = tuple(ProjectedMessage(n.seq, n.type, n.data, n.typed) for n in surface.nodes if _visible(n))
    return Projection(messages, header, header_json, todos, title, surface.replacements)


class _HeaderField(msgspec.Struct):
    header: msgspec.Raw


_HEADER_FIELD = msgspec.json.Decoder(_HeaderField)
