"""The stream protocol: the closed `StreamChunk` union, `TokenUsage`, finish reasons and `LlmFailure`.

Wire tags and field names are the TypeScript original's (`block-start{index, blockType}`, `finish{reason:{kind}}`),
so recorded `assistant/chunk` payloads decode unchanged. A stream is: blocks opened, filled by deltas and closed by
`block-end` carrying the assembled block; then `usage` (optional); then exactly one `finish`, and nothing after it.
A field a chunk type does not model is accepted and left out of the typed value (the session log keeps it).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from ._content import AssistantBlock, CallId

__all__ = [
    "BlockEnd",
    "BlockStart",
    "BlockType",
    "Finish",
    "FinishAborted",
    "FinishError",
    "FinishMaxTokens",
    "FinishReason",
    "FinishStop",
    "FinishToolCalls",
    "FailureCode",
    "LlmFailure",
    "ReasoningDelta",
    "StreamChunk",
    "TextDelta",
    "TokenUsage",
    "ToolCallDelta",
    "UsageChunk",
    "decode_chunk",
    "encode_chunk",
]

BlockType = Literal["text", "reasoning", "tool-call"]


class FailureCode:
    """Stable failure codes (`LlmFailure.code`). Codes are open-ended strings: adapters add `HTTP_<status>` and
    `UPPER(finish_reason)`; these are the ones dsh itself produces or routes on."""

    AUTH: Final = "AUTH"
    QUOTA: Final = "QUOTA"
    RATE_LIMIT: Final = "RATE_LIMIT"
    CONTEXT_WINDOW_EXCEEDED: Final = "CONTEXT_WINDOW_EXCEEDED"
    INVALID_REQUEST: Final = "INVALID_REQUEST"
    SERVER: Final = "SERVER"
    TRANSPORT: Final = "TRANSPORT"
    TIMEOUT: Final = "TIMEOUT"
    STREAM_CLOSED: Final = "STREAM_CLOSED"
    MALFORMED_RESPONSE: Final = "MALFORMED_RESPONSE"
    EMPTY_RESPONSE: Final = "EMPTY_RESPONSE"
    ABORTED: Final = "ABORTED"
    MISSING_CREDENTIAL: Final = "MISSING_CREDENTIAL"
    UNSUPPORTED_CONTENT: Final = "UNSUPPORTED_CONTENT"
    UNSUPPORTED_REASONING_EFFORT: Final = "UNSUPPORTED_REASONING_EFFORT"
    UNKNOWN_MODEL: Final = "UNKNOWN_MODEL"
    UNKNOWN_PROVIDER: Final = "UNKNOWN_PROVIDER"
    PROTOCOL: Final = "PROTOCOL"
    UNKNOWN: Final = "UNKNOWN"


class TokenUsage(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True, kw_only=True):
    """Token counts of one call. `input_tokens` excludes cache reads (the counts are disjoint);
    `reasoning_tokens` is already counted in `output_tokens`. Absent optional counts are not written."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


class LlmFailure(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True, kw_only=True):
    """Why a call failed: a message for people, a stable `code` for code, and what the provider told us
    (`status`, `provider_retry_after_ms` from `Retry-After`, `request_id`)."""

    message: str
    code: str
    status: int | None = None
    provider_retry_after_ms: int | None = None
    request_id: str | None = None


class FinishStop(msgspec.Struct, frozen=True, tag_field="kind", tag="stop"):
    """The model ended its answer."""


class FinishToolCalls(msgspec.Struct, frozen=True, tag_field="kind", tag="tool-calls"):
    """The model ended to have its tool calls run."""


class FinishMaxTokens(msgspec.Struct, frozen=True, tag_field="kind", tag="max-tokens"):
    """The output hit `max_tokens`; the loop drops tool calls of such a message."""


class FinishAborted(msgspec.Struct, frozen=True, tag_field="kind", tag="aborted"):
    """The call was aborted (recorded logs and replay overrides; the live transport propagates cancellation)."""

    failure: LlmFailure


class FinishError(msgspec.Struct, frozen=True, tag_field="kind", tag="error"):
    """The call failed; `failure.code` says how."""

    failure: LlmFailure


FinishReason = FinishStop | FinishToolCalls | FinishMaxTokens | FinishAborted | FinishError


class BlockStart(msgspec.Struct, frozen=True, tag="block-start", rename="camel", kw_only=True):
    """Block `index` opens; its kind is `block_type` (wire `blockType`)."""

    index: int
    block_type: BlockType


class TextDelta(msgspec.Struct, frozen=True, tag="text-delta", kw_only=True):
    """More text for text block `index`."""

    index: int
    text: str


class ReasoningDelta(msgspec.Struct, frozen=True, tag="reasoning-delta", kw_only=True):
    """More reasoning for reasoning block `index`."""

    index: int
    text: str


class ToolCallDelta(
    msgspec.Struct,
    frozen=True,
    tag="tool-call-delta",
    rename="camel",
    omit_defaults=True,
    kw_only=True,
):
    """A fragment of the JSON arguments of tool-call block `index` (the fragment may be empty)."""

    index: int
    id: CallId
    name: str | None = None
    arguments_delta: str


class BlockEnd(msgspec.Struct, frozen=True, tag="block-end", kw_only=True):
    """Block `index` is complete; `block` is its assembled content."""

    index: int
    block: AssistantBlock


class UsageChunk(msgspec.Struct, frozen=True, tag="usage"):
    """The call's token usage; comes before `finish`."""

    usage: TokenUsage


class Finish(
    msgspec.Struct,
    frozen=True,
    tag="finish",
    rename="camel",
    omit_defaults=True,
    kw_only=True,
):
    """The terminal chunk: exactly one per call, and last. `replay_state` is opaque provider state.
    `provider_reason` is the server's own finish value (`finish_reason` on the wire) when an adapter logged another
    reason so that the finish agrees with the message (a `stop` sent with tool calls is `tool-calls`)."""

    reason: FinishReason
    replay_state: Any = None
    provider_reason: str | None = None


StreamChunk = BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk | Finish

_decoder: msgspec.json.Decoder[StreamChunk] = msgspec.json.Decoder(StreamChunk)
_encoder = msgspec.json.Encoder()


def decode_chunk(data: bytes | str) -> StreamChunk:
    """Decode one chunk from JSON: an unknown type or a mistyped field raises `msgspec.ValidationError` (what and
    where); a field the type does not model is ignored."""
    return _decoder.decode(data)


def encode_chunk(chunk: StreamChunk) -> bytes:
    """Encode one chunk as the session log writes it."""
    return _encoder.encode(chunk)
