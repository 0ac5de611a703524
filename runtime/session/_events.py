"""The wire events of format version 0: the header, the lossless `StoredEvent`, and typed views of every core type.

A `StoredEvent` keeps its `data` as the JSON text it was written with, so fields dsh does not model survive import,
storage and export; `view()` decodes a typed, frozen Struct (a core event, or `OpaqueEvent` for unknown types).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "FORMAT_VERSION",
    "SURFACE_TYPES",
    "AssistantChunk",
    "AssistantChunkData",
    "AssistantMessage",
    "AssistantMessageData",
    "Block",
    "BlockEnd",
    "BlockStart",
    "CompactionData",
    "CompactionEnd",
    "CompactionPrune",
    "CompactionStart",
    "CompactionSummary",
    "CoreEvent",
    "EmptyData",
    "Event",
    "Finish",
    "FinishReason",
    "LlmRetry",
    "LlmRetryData",
    "LlmRetryStarted",
    "Message",
    "MessageSource",
    "OpaqueEvent",
    "ReasoningDelta",
    "Replace",
    "RequestContext",
    "RequestContextData",
    "RequestHeader",
    "RequestHeaderData",
    "SessionEndSeed",
    "SessionHeader",
    "SessionTitle",
    "SessionTitleData",
    "ShadowedRange",
    "StepData",
    "StepEnd",
    "StepStart",
    "StoredEvent",
    "StreamChunk",
    "SubagentDescriptor",
    "SubagentDescriptorData",
    "SurfaceOp",
    "TextDelta",
    "Todo",
    "TodoWrite",
    "TodoWriteData",
    "ToolCall",
    "ToolCallData",
    "ToolCallDelta",
    "ToolResult",
    "ToolResultData",
    "ToolResultError",
    "TurnEnd",
    "TurnEndData",
    "TurnEndReason",
    "TurnStart",
    "TurnStartData",
    "Usage",
    "UsageChunk",
    "UserMessage",
    "core_event_types",
    "data_type",
    "encode_data",
]

FORMAT_VERSION = 0


class _Wire(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Base of every wire struct: frozen, camelCase on the wire, absent optional fields omitted."""


# ---------------------------------------------------------------- header


class SessionHeader(_Wire, tag="session", tag_field="type", frozen=True, kw_only=True):
    """JSONL line 1: storage metadata, not an event. `extra` holds header keys dsh does not model."""

    version: int
    id: str
    created_at: int
    cwd: str | None = None
    parent_session: str | None = None
    seed_length: int | None = None
    delegation_depth: int


# ---------------------------------------------------------------- surface ops


class Replace(_Wire, tag="replace", tag_field="op", frozen=True, kw_only=True):
    """`{op:"replace", start, end}`: the surface nodes start..end (inclusive, in surface order) are replaced."""

    start: int
    end: int


SurfaceOp = Literal["append"] | Replace
SURFACE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})


# ---------------------------------------------------------------- messages and blocks


class Block(_Wire, frozen=True, kw_only=True):
    """A content block: text, reasoning, tool-call, tool-result, image, ... (fields by `type`)."""

    type: str
    text: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: str | None = None
    tool_call_id: str | None = None
    is_error: bool | None = None
    content: tuple[Block, ...] | None = None


class MessageSource(_Wire, frozen=True, kw_only=True):
    """Where a message came from: `user`, `plugin`, `model`, `tool`, ..."""

    kind: str
    call_id: str | None = None
    provider: str | None = None
    model: str | None = None
    plugin: str | None = None


class Message(_Wire, frozen=True, kw_only=True):
    """A typed view of a message as logged (the stored JSON keeps what this view leaves out)."""

    id: str | None = None
    role: str
    source: MessageSource | None = None
    content: tuple[Block, ...]


# ---------------------------------------------------------------- stream chunks


class _Chunk(_Wire, tag_field="type", frozen=True, kw_only=True):
    index: int


class BlockStart(_Chunk, tag="block-start", frozen=True, kw_only=True):
    block_type: str


class TextDelta(_Chunk, tag="text-delta", frozen=True, kw_only=True):
    text: str


class ReasoningDelta(_Chunk, tag="reasoning-delta", frozen=True, kw_only=True):
    text: str


class ToolCallDelta(_Chunk, tag="tool-call-delta", frozen=True, kw_only=True):
    id: str
    name: str | None = None
    arguments_delta: str


class BlockEnd(_Chunk, tag="block-end", frozen=True, kw_only=True):
    block: Block


class Usage(_Wire, frozen=True, kw_only=True):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


class UsageChunk(_Wire, tag="usage", tag_field="type", frozen=True, kw_only=True):
    usage: Usage


class FinishReason(_Wire, frozen=True, kw_only=True):
    """`stop`, `tool-calls`, `max-tokens`, `aborted{failure}`, `error{failure}` (extensible)."""

    kind: str
    failure: dict[str, Any] | None = None


class Finish(_Wire, tag="finish", tag_field="type", frozen=True, kw_only=True):
    reason: FinishReason
    replay_state: Any = None


StreamChunk = BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk | Finish


# ---------------------------------------------------------------- event data


class TurnStartData(_Wire, frozen=True, kw_only=True):
    turn: int


class TurnEndReason(_Wire, frozen=True, kw_only=True):
    """`completed`, `aborted`, `blocked`, `error`, `max-tokens`, `interrupted` (extensible)."""

    kind: str


class TurnEndData(_Wire, frozen=True, kw_only=True):
    turn: int
    reason: TurnEndReason


class StepData(_Wire, frozen=True, kw_only=True):
    turn: int
    step: int


class AssistantChunkData(_Wire, frozen=True, kw_only=True):
    turn: int
    step: int
    chunk: StreamChunk


class AssistantMessageData(_Wire, frozen=True, kw_only=True):
    turn: int
    step: int
    message: Message
    usage: Usage | None = None
    interrupted: bool | None = None


class ToolCallData(_Wire, frozen=True, kw_only=True):
    turn: int
    step: int
    call_id: str
    name: str
    arguments: str


class ToolResultError(_Wire, frozen=True, kw_only=True):
    name: str
    code: str


class ToolResultData(_Wire, frozen=True, kw_only=True):
    turn: int
    step: int
    message: Message
    error: ToolResultError | None = None
    meta: Any = None


class Todo(_Wire, frozen=True, kw_only=True):
    content: str
    status: str


class TodoWriteData(_Wire, frozen=True, kw_only=True):
    todos: tuple[Todo, ...]


class HeaderConfig(_Wire, frozen=True, kw_only=True):
    provider: str
    model: str


class EpochHeader(_Wire, frozen=True, kw_only=True):
    config: HeaderConfig
    system: Any = None
    tools: Any = None


class RequestHeaderData(_Wire, frozen=True, kw_only=True):
    header: EpochHeader
    reason: str


class RequestContextData(_Wire, frozen=True, kw_only=True):
    provider: str
    model: str
    context_window: int | None = None


class EmptyData(_Wire, frozen=True, kw_only=True):
    """`{}` (`session/end-seed`)."""


class ShadowedRange(_Wire, frozen=True, kw_only=True):
    """The first and last surface node a compaction shadowed (`shadowedSeqs` is authoritative)."""

    start: int
    end: int


class CompactionData(_Wire, frozen=True, kw_only=True):
    """`compaction/start|summary|end|prune` (spec §1.6). `start`/`end`: `{compactionId, turn}` (`end` adds
    `failure` when the summariser call failed). `summary`: the summary blocks, the call's complete `rawOutput`,
    `llmStreamCall` (true: one `LlmRuntime.stream()` call produced `rawOutput`, and replay serves it), the shadowed
    nodes, their estimated token count, the call's provider, model, `maxTokens` and `usage`. `prune`: the
    `tool/result` nodes whose content was replaced and their estimated token count."""

    compaction_id: str | None = None
    turn: int | None = None
    summary: tuple[Block, ...] | None = None
    raw_output: tuple[Block, ...] | None = None
    llm_stream_call: bool | None = None
    shadowed_range: ShadowedRange | None = None
    shadowed_seqs: tuple[int, ...] | None = None
    shadowed_token_count: int | None = None
    provider: str | None = None
    model: str | None = None
    max_tokens: int | None = None
    usage: Usage | None = None
    failure: dict[str, Any] | None = None


class LlmRetryData(_Wire, frozen=True, kw_only=True):
    turn: int | None = None
    step: int | None = None


class SubagentDescriptorData(_Wire, frozen=True, kw_only=True):
    version: int
    mode: str
    provider: str
    label: str | None = None


class SessionTitleData(_Wire, frozen=True, kw_only=True):
    title: str
    message_seqs: tuple[int, ...] = ()


# ---------------------------------------------------------------- typed events (envelope + data)


class Event(_Wire, tag_field="type", frozen=True, kw_only=True):
    """A typed event: the envelope and a typed `data`. `seq`/`time` are -1 until the log assigns them."""

    seq: int = -1
    time: int = -1
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool | None = None
    data: Any


class TurnStart(Event, tag="turn/start", frozen=True, kw_only=True):
    data: TurnStartData


class TurnEnd(Event, tag="turn/end", frozen=True, kw_only=True):
    data: TurnEndData


class StepStart(Event, tag="step/start", frozen=True, kw_only=True):
    data: StepData


class StepEnd(Event, tag="step/end", frozen=True, kw_only=True):
    data: StepData


class UserMessage(Event, tag="user/message", frozen=True, kw_only=True):
    data: Message


class AssistantChunk(Event, tag="assistant/chunk", frozen=True, kw_only=True):
    data: AssistantChunkData


class AssistantMessage(Event, tag="assistant/message", frozen=True, kw_only=True):
    data: AssistantMessageData


class ToolCall(Event, tag="tool/call", frozen=True, kw_only=True):
    data: ToolCallData


class ToolResult(Event, tag="tool/result", frozen=True, kw_only=True):
    data: ToolResultData


class RequestHeader(Event, tag="request/header", frozen=True, kw_only=True):
    data: RequestHeaderData


class RequestContext(Event, tag="request/context", frozen=True, kw_only=True):
    data: RequestContextData


class SessionEndSeed(Event, tag="session/end-seed", frozen=True, kw_only=True):
    data: EmptyData


class TodoWrite(Event, tag="todo/write", frozen=True, kw_only=True):
    data: TodoWriteData


class CompactionStart(Event, tag="compaction/start", frozen=True, kw_only=True):
    data: CompactionData


class CompactionSummary(Event, tag="compaction/summary", frozen=True, kw_only=True):
    data: CompactionData


class CompactionEnd(Event, tag="compaction/end", frozen=True, kw_only=True):
    data: CompactionData


class CompactionPrune(Event, tag="compaction/prune", frozen=True, kw_only=True):
    data: CompactionData


class LlmRetry(Event, tag="llm/retry", frozen=True, kw_only=True):
    data: LlmRetryData


class LlmRetryStarted(Event, tag="llm/retry-started", frozen=True, kw_only=True):
    data: LlmRetryData


class SubagentDescriptor(Event, tag="subagent/descriptor", frozen=True, kw_only=True):
    data: SubagentDescriptorData


class SessionTitle(Event, tag="session/title", frozen=True, kw_only=True):
    data: SessionTitleData


class OpaqueEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event of a type dsh does not know: kept verbatim, never projected."""

    type: str
    seq: int
    time: int
    data: Any
    ignorable: bool | None = None


CoreEvent = (
    TurnStart
    | TurnEnd
    | StepStart
    | StepEnd
    | UserMessage
    | AssistantChunk
    | AssistantMessage
    | ToolCall
    | ToolResult
    | RequestHeader
    | RequestContext
    | SessionEndSeed
    | TodoWrite
    | CompactionStart
    | CompactionSummary
    | CompactionEnd
    | CompactionPrune
    | LlmRetry
    | LlmRetryStarted
    | SubagentDescriptor
    | SessionTitle
)

_CORE: dict[str, type[Event]] = {
    str(cls.__struct_config__.tag): cls
    for cls in (
        TurnStart,
        TurnEnd,
        StepStart,
        StepEnd,
        UserMessage,
        AssistantChunk,
        AssistantMessage,
        ToolCall,
        ToolResult,
        RequestHeader,
        RequestContext,
        SessionEndSeed,
        TodoWrite,
        CompactionStart,
        CompactionSummary,
        CompactionEnd,
        CompactionPrune,
        LlmRetry,
        LlmRetryStarted,
        SubagentDescriptor,
        SessionTitle,
    )
}
_DATA_TYPES: dict[str, type[msgspec.Struct]] = {
    tag: next(f.type for f in msgspec.structs.fields(cls) if f.name == "data") for tag, cls in _CORE.items()
}
_DATA_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    tag: msgspec.json.Decoder(data) for tag, data in _DATA_TYPES.items()
}
_ANY_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder()


def core_event_types() -> frozenset[str]:
    """The wire tags of every core event type."""
    return frozenset(_CORE)


def data_type(event_type: str) -> type[msgspec.Struct] | None:
    """The typed `data` Struct of a core event type, or None for a type dsh does not know."""
    return _DATA_TYPES.get(event_type)


def encode_data(data: Any) -> str:
    """Compact JSON text of an event's data."""
    return _ENCODER.encode(data).decode()


class StoredEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One event exactly as logged: `data` and `extra` (envelope keys dsh does not model) are JSON text as written.

    Equality compares the written JSON text, so a round trip that preserves it compares equal.
    """

    type: str
    seq: int
    time: int
    data: str
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool | None = None
    extra: str | None = None

    @property
    def is_core(self) -> bool:
        return self.type in _CORE

    def decode_data(self) -> Any:
        """The typed data of a core event (a Struct), or plain JSON values for an unknown type."""
        decoder = _DATA_DECODERS.get(self.type)
        return (decoder or _ANY_DECODER).decode(self.data)

    def view(self) -> CoreEvent | OpaqueEvent:
        """A typed, frozen view of this event."""
        cls = _CORE.get(self.type)
        if cls is None:
            return OpaqueEvent(
                type=self.type,
                seq=self.seq,
                time=self.time,
                data=self.decode_data(),
                ignorable=self.ignorable,
            )
        event: CoreEvent = cls(  # type: ignore[assignment]  # _CORE holds exactly the CoreEvent classes
            seq=self.seq,
            time=self.time,
            data=self.decode_data(),
            surface_op=self.surface_op,
            source_event_seqs=self.source_event_seqs,
            ignorable=self.ignorable,
        )
        return event

    @classmethod
    def from_event(cls, event: Event, *, seq: int, time: int) -> StoredEvent:
        """The stored form of a typed event, with the seq and time the log assigned."""
        return cls(
            type=str(type(event).__struct_config__.tag),
            seq=seq,
            time=time,
            data=encode_data(event.data),
            surface_op=event.surface_op,
            source_event_seqs=event.source_event_seqs,
            ignorable=event.ignorable,
        )
