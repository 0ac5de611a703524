"""The rules every event of a log obeys, checked one event at a time: seq contiguity, the envelope, the surface fold
(`append` / `replace`), and the turn/step/tool-call state that crash repair and fork need.

`LogState` is fed every event in seq order (import, append, reopen); it keeps only small state (the surface nodes and
the open turn), never the chunks, so checking a 1M-chunk log runs in constant memory per chunk. State a layer above
derives from the log is its own `LogFold`, which `LogState` feeds after its rules accepted an event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from dsh.runtime.llm import (
    Message,
    ToolCallBlock,
    ToolResultBlock,
    ToolSource,
)

from ._errors import LogRuleError
from ._events import (
    SURFACE_TYPES,
    AssistantChunk,
    AssistantMessageData,
    AssistantMessageEvent,
    Event,
    InboxSpliced,
    JobSettled,
    Replace,
    RequestContext,
    RequestHeader,
    StepData,
    StepEnd,
    StepStart,
    StoredEvent,
    ToolCall,
    ToolCallData,
    ToolResultData,
    ToolResultEvent,
    TurnEnd,
    TurnEndData,
    TurnStart,
    TurnStartData,
    UserMessageEvent,
    core_event_types,
    decode_data,
    encode_data,
)
from ._fold import LogFold

__all__ = [
    "LogState",
    "OpenToolCall",
    "SurfaceFold",
    "SurfaceNode",
    "message_json",
]

_CORE = core_event_types()
_LEGACY = {"request/header-delta": "headers are full request/header snapshots (reason initial/resume/change)"}
_DECODED = SURFACE_TYPES | {
    TurnStart.TAG,
    TurnEnd.TAG,
    StepStart.TAG,
    StepEnd.TAG,
    ToolCall.TAG,
    RequestHeader.TAG,
    RequestContext.TAG,
    InboxSpliced.TAG,
    JobSettled.TAG,
}
"""The types whose data is decoded strictly on every feed: those the rules read (the loop's and the surface's
integrity lives there) and the request and inbox records every reader of the log relies on. The data of the other
known types is decoded by their readers (or for the folds that want them), as the original does."""


class _MessageField(msgspec.Struct):
    message: msgspec.Raw


_MESSAGE_FIELD = msgspec.json.Decoder(_MessageField)


def message_json(event_type: str, data: str) -> str:
    """The JSON text of the message a surface event's data carries, exactly as written."""
    if event_type == UserMessageEvent.TAG:
        return data
    try:
        return bytes(_MESSAGE_FIELD.decode(data).message).decode()
    except msgspec.ValidationError:  # an older shape the original still reads: the message it converts to
        return encode_data(_message_of(decode_data(event_type, data)))


def _message_of(data: object) -> Message | None:
    if isinstance(data, AssistantMessageData | ToolResultData):
        return data.message
    return data if isinstance(data, Message) else None


@dataclass(frozen=True, slots=True)
class SurfaceNode:
    """One node of the surface: the event that put it there, its data as written (the message inside it is
    extracted on demand) and the typed message when its writer handed it over (an append)."""

    seq: int
    type: str
    data: str
    typed: Message | None = None

    @property
    def message(self) -> str:
        """The message JSON text, exactly as written."""
        return message_json(self.type, self.data)


@dataclass(slots=True)
class SurfaceFold:
    """The surface in order; `append` pushes a node, `replace` splices one in place of a range of nodes."""

    nodes: list[SurfaceNode] = field(default_factory=list)
    replacements: int = 0

    def apply(self, event: StoredEvent, message: Message | None = None) -> None:
        """Fold one surface event (checked first: an invalid op leaves the fold unchanged); `message` is its typed
        message to keep with the node."""
        self.commit(event, message, self.check(event))

    def check(self, event: StoredEvent) -> tuple[int, int] | None:
        """Check one surface event against the surface, changing nothing: the index span of the nodes a `replace`
        shadows (None: an append). Raises `LogRuleError` for an invalid op."""
        op = event.surface_op
        if op == "append":
            return None
        assert isinstance(op, Replace)
        first, last = self._span(event, op)
        shadowed = self.nodes[first : last + 1]
        sources = set(event.source_event_seqs or ())
        missing = [n.seq for n in shadowed if n.seq not in sources]
        if missing:
            raise LogRuleError(
                f"a replace must list every node it shadows in sourceEventSeqs; missing {missing}",
                rule="surface.replace-sources",
                seq=event.seq,
            )
        if event.type == ToolResultEvent.TAG:
            self._check_prune(event, shadowed, SurfaceNode(event.seq, event.type, event.data))
        return first, last

    def commit(self, event: StoredEvent, message: Message | None, span: tuple[int, int] | None) -> None:
        """Fold in a surface event `check` accepted, at the `span` it returned."""
        node = SurfaceNode(event.seq, event.type, event.data, message)
        if span is None:
            self.nodes.append(node)
            return
        first, last = span
        self.nodes[first : last + 1] = [node]
        self.replacements += 1

    def _span(self, event: StoredEvent, op: Replace) -> tuple[int, int]:
        index = {n.seq: i for i, n in enumerate(self.nodes)}
        current = [n.seq for n in self.nodes]
        for name, value in (("start", op.start), ("end", op.end)):
            if value not in index:
                raise LogRuleError(
                    f"replace {name}={value} is not a current surface node; current nodes: {current}",
                    rule="surface.replace-range",
                    seq=event.seq,
                )
        first, last = index[op.start], index[op.end]
        if first > last:
            raise LogRuleError(
                f"replace start={op.start} comes after end={op.end} in surface order",
                rule="surface.replace-order",
                seq=event.seq,
            )
        return first, last

    @staticmethod
    def _check_prune(event: StoredEvent, shadowed: list[SurfaceNode], node: SurfaceNode) -> None:
        if len(shadowed) != 1 or shadowed[0].type != ToolResultEvent.TAG:
            raise LogRuleError(
                "a tool/result replace must shadow exactly one tool/result node",
                rule="surface.prune-target",
                seq=event.seq,
            )
        if _without_result_content(shadowed[0].message) != _without_result_content(node.message):
            raise LogRuleError(
                "a tool/result replace may change only the tool-result content",
                rule="surface.prune-content",
                seq=event.seq,
            )


def _without_result_content(message_text: str) -> object:
    message = msgspec.json.decode(message_text)
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        message["content"] = [
            {k: v for k, v in block.items() if k != "content"} if isinstance(block, dict) else block
            for block in message["content"]
        ]
    return message


@dataclass(frozen=True, slots=True)
class OpenToolCall:
    """A tool call the model asked for in the open turn; `call_seq` is its `tool/call` event, if logged."""

    call_id: str
    name: str
    turn: int
    step: int
    call_seq: int | None


@dataclass(slots=True)
class LogState:
    """What the log's rules need to know about everything before `next_seq`: the surface, the last and the open
    turn, step and tool calls (crash repair and fork read them), the last event's type and time. `folds` are the
    `LogFold`s fed each accepted event of the types they want (state a layer above derives from the log)."""

    next_seq: int = 0
    surface: SurfaceFold = field(default_factory=SurfaceFold)
    last_turn: int = 0
    open_turn: int | None = None
    open_turn_seq: int | None = None
    open_step: tuple[int, int] | None = None
    last_type: str | None = None
    last_time: int = 0
    requested: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    dispatched: dict[str, int] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    folds: Sequence[LogFold] = ()
    _wanted: dict[str, tuple[LogFold, ...]] = field(init=False, repr=False, compare=False)
    _chunk_folds: tuple[LogFold, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        wanted: dict[str, list[LogFold]] = {}
        for fold in self.folds:
            for kind in fold.types:
                wanted.setdefault(kind.TAG, []).append(fold)
        self._wanted = {tag: tuple(folds) for tag, folds in wanted.items()}
        self._chunk_folds = self._wanted.get(AssistantChunk.TAG, ())

    def wants(self, event_type: type[Event]) -> bool:
        """Whether a fold wants events of `event_type` (a reader may skip the types neither the rules nor a fold
        read)."""
        return event_type.TAG in self._wanted

    def feed(self, event: StoredEvent, *, check_seq: bool = True, data: object = None) -> None:
        """Check one event against the rules and the folds, then fold it in; raises `LogRuleError` and changes
        nothing (neither the rules' state nor a fold) if it breaks one. `data` is the event's typed data when the
        caller has it, else the event's kept view is used (decoded once, for the types the rules or a fold read)."""
        if check_seq and event.seq != self.next_seq:
            raise LogRuleError(
                f"expected seq {self.next_seq} (seqs are contiguous from 0), got {event.seq}",
                rule="seq.contiguous",
                seq=event.seq,
            )
        if (
            event.type == AssistantChunk.TAG
            and event.surface_op is None
            and event.source_event_seqs is None
            and event.time >= 0
        ):
            # the bulk of every log: a chunk with a plain envelope changes no state the rules keep
            if self._chunk_folds:
                self._fold(event, data, self._chunk_folds)
            self.next_seq, self.last_type, self.last_time = event.seq + 1, event.type, event.time
            return
        self._check_envelope(event)
        folds = self._wanted.get(event.type, ()) if self._wanted else ()
        given = data is not None
        if data is None and (event.type in _DECODED or folds):
            data = self._decode(event)
        if isinstance(data, AssistantMessageData):
            _check_model_source(event, data)
        surface = event.surface_op is not None
        span = self.surface.check(event) if surface else None
        for fold in folds:
            fold.check(event, data)
        if surface:
            # a node keeps the typed message its writer handed over (appends: free); one decoded here to check it
            # is not kept, so a long history costs its text once, not twice (readers decode it when they need it)
            self.surface.commit(event, _message_of(data) if given else None, span)
        self._track(event, data)
        self.next_seq = event.seq + 1
        self.last_type = event.type
        self.last_time = event.time
        for fold in folds:
            fold.feed(event, data)

    def _fold(self, event: StoredEvent, data: object, folds: tuple[LogFold, ...]) -> None:
        if data is None:
            data = self._decode(event)
        for fold in folds:
            fold.check(event, data)
        for fold in folds:
            fold.feed(event, data)

    def open_tool_calls(self) -> list[OpenToolCall]:
        """Tool calls of the open turn that have no result yet, in the order the model made them."""
        return [
            OpenToolCall(call_id, name, turn, step, self.dispatched.get(call_id))
            for call_id, (name, turn, step) in self.requested.items()
            if call_id not in self.answered
        ]

    def _check_envelope(self, event: StoredEvent) -> None:
        if event.type in _LEGACY:
            raise LogRuleError(
                f'"{event.type}" is a legacy type the format no longer reads; {_LEGACY[event.type]}',
                rule="envelope.legacy",
                seq=event.seq,
            )
        surface = event.type in SURFACE_TYPES
        if event.type not in _CORE and event.surface_op is not None:
            raise LogRuleError(
                f'unknown event type "{event.type}" carries surfaceOp; dsh cannot project it',
                rule="envelope.unknown-surface",
                seq=event.seq,
            )
        if surface and event.surface_op is None:
            raise LogRuleError(
                f"a {event.type} event must carry surfaceOp", rule="envelope.surface-op", seq=event.seq
            )
        if not surface and (event.surface_op is not None or event.source_event_seqs is not None):
            raise LogRuleError(
                f"surfaceOp and sourceEventSeqs are allowed only on {', '.join(sorted(SURFACE_TYPES))}",
                rule="envelope.surface-only",
                seq=event.seq,
            )
        sources = event.source_event_seqs
        if sources is not None:
            if not sources and event.type != AssistantMessageEvent.TAG:
                raise LogRuleError(
                    "an empty sourceEventSeqs is allowed only on assistant/message",
                    rule="envelope.sources-empty",
                    seq=event.seq,
                )
            if len(set(sources)) != len(sources) or any(s < 0 or s >= event.seq for s in sources):
                raise LogRuleError(
                    f"sourceEventSeqs must be unique, non-negative and smaller than the event's seq: {list(sources)}",
                    rule="envelope.sources",
                    seq=event.seq,
                )
        if event.time < 0:
            raise LogRuleError(
                f"time must be epoch ms >= 0, got {event.time}", rule="envelope.time", seq=event.seq
            )

    def _decode(self, event: StoredEvent) -> object:
        try:
            data = event.view().data
        except msgspec.DecodeError as error:
            raise LogRuleError(f"bad {event.type} data: {error}", rule="data.schema", seq=event.seq) from None
        return data

    def _track(self, event: StoredEvent, data: object) -> None:
        kind = event.type
        if isinstance(data, TurnStartData) and kind == TurnStart.TAG:
            self.open_turn, self.open_turn_seq, self.open_step = data.turn, event.seq, None
            self.last_turn = max(self.last_turn, data.turn)
            self.requested.clear()
            self.dispatched.clear()
            self.answered.clear()
        elif isinstance(data, TurnEndData):
            self.open_turn = self.open_turn_seq = None
            self.open_step = None
            self.last_turn = max(self.last_turn, data.turn)
        elif isinstance(data, StepData):
            self.open_step = (data.turn, data.step) if kind == StepStart.TAG else None
        elif isinstance(data, AssistantMessageData):
            if not data.interrupted:
                for block in data.message.content:
                    if isinstance(block, ToolCallBlock):
                        self.requested[block.id] = (block.name, data.turn, data.step)
        elif isinstance(data, ToolCallData):
            self.dispatched[data.call_id] = event.seq
        elif isinstance(data, ToolResultData):
            source = data.message.source
            if isinstance(source, ToolSource):
                self.answered.add(source.call_id)
            for part in data.message.content:
                if isinstance(part, ToolResultBlock):
                    self.answered.add(part.tool_call_id)


def _check_model_source(event: StoredEvent, data: AssistantMessageData) -> None:
    source = data.message.source
    if not source.provider or not source.model:
        raise LogRuleError(
            "an assistant/message needs message.source {kind:'model', provider, model}",
            rule="data.model-source",
            seq=event.seq,
        )
