"""A recorded model call as the provider would send it: the entry's chunks as OpenAI chat-completions SSE, or, for a
call that failed, the HTTP status and error body (or the error event mid-stream) the provider sends.

What a `StreamChunk` carries maps onto the wire as plugins/llm_openai reads it: a delta per text, reasoning and
tool-call delta (tool calls numbered by the order they first appear), the usage as `prompt_tokens` (cache reads
included, as the provider counts them) with `cached_tokens` and `reasoning_tokens`, the finish as `finish_reason`
(the provider's own word when the recording kept it), then `[DONE]`. A block the recording ended without streaming a
delta is sent whole as one delta. A recorded failure is served as the provider reports it: before any content, an
HTTP status (the recorded one, else the status providers send for its code) with `{"error": {...}}`; after content,
an error event in the stream. `EMPTY_RESPONSE` is a finished stream with nothing in it (what the adapter calls empty).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from dsh.runtime.llm import (
    BlockEnd,
    FailureCode,
    Finish,
    FinishError,
    FinishMaxTokens,
    FinishStop,
    FinishToolCalls,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)

__all__ = ["ERROR_STATUS", "EXACT_CODES", "WireReply", "error_object", "wire_reply"]

ERROR_STATUS: dict[str, int] = {
    FailureCode.AUTH: 401,
    FailureCode.QUOTA: 402,
    FailureCode.RATE_LIMIT: 429,
    FailureCode.CONTEXT_WINDOW_EXCEEDED: 400,
    FailureCode.INVALID_REQUEST: 400,
    FailureCode.SERVER: 500,
}
"""The HTTP status a provider answers a failure of each code with, when the recording kept no status."""

EXACT_CODES = frozenset(
    (*ERROR_STATUS, FailureCode.EMPTY_RESPONSE, FailureCode.STREAM_CLOSED, FailureCode.MALFORMED_RESPONSE)
)
"""The failure codes a provider's answer carries, so the adapter must map the served answer back to the same code.
Any other recorded failure (dsh's own: a timeout, a protocol error) is served as a stream cut short, and any failure
of the adapter stands for it."""

_ERROR_TYPE: dict[str, str] = {
    FailureCode.AUTH: "invalid_api_key",
    FailureCode.QUOTA: "insufficient_quota",
    FailureCode.RATE_LIMIT: "rate_limit_error",
    FailureCode.CONTEXT_WINDOW_EXCEEDED: "context_length_exceeded",
    FailureCode.INVALID_REQUEST: "invalid_request_error",
    FailureCode.SERVER: "server_error",
    FailureCode.TIMEOUT: "timeout",
}
"""The error `type` a provider names each code with (OpenAI's words)."""

_REASONS = {FinishStop: "stop", FinishToolCalls: "tool_calls", FinishMaxTokens: "length"}

_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class WireReply:
    """What the server sends for one call. `status` and `body`: an HTTP error answer (no stream); else `events`,
    the `data:` payloads in order, then `[DONE]` when `done`. `failure`: the recorded failure the reply stands for
    (None: the call succeeds). `hang`: after the events, keep the connection open until the client leaves."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    events: tuple[bytes, ...] = ()
    done: bool = True
    failure: LlmFailure | None = None
    hang: bool = False

    def sse(self) -> list[bytes]:
        """The stream's byte frames, one per event."""
        frames = [b"data: " + event + b"\n\n" for event in self.events]
        if self.done:
            frames.append(b"data: [DONE]\n\n")
        return frames


def _delta(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _encode(
        {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def error_object(failure: LlmFailure) -> dict[str, Any]:
    """The provider's `error` object for a recorded failure: its message, its code's OpenAI type."""
    error: dict[str, Any] = {
        "message": failure.message,
        "type": _ERROR_TYPE.get(failure.code, failure.code.lower()),
    }
    if failure.status is not None:
        error["code"] = failure.status
    return error


def _headers(failure: LlmFailure) -> dict[str, str]:
    headers = {}
    if failure.provider_retry_after_ms is not None:
        headers["retry-after-ms"] = str(failure.provider_retry_after_ms)
    if failure.request_id is not None:
        headers["x-request-id"] = failure.request_id
    return headers


def _usage(chunk: UsageChunk) -> bytes:
    usage = chunk.usage
    wire: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens + (usage.cache_read_tokens or 0),
        "completion_tokens": usage.output_tokens,
    }
    if usage.cache_read_tokens is not None:
        wire["prompt_tokens_details"] = {"cached_tokens": usage.cache_read_tokens}
    if usage.reasoning_tokens is not None:
        wire["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return _encode({"object": "chat.completion.chunk", "choices": [], "usage": wire})


def wire_reply(
    chunks: Sequence[StreamChunk], *, failure: LlmFailure | None = None, hang: bool = False
) -> WireReply:
    """The reply for a recorded call's `chunks`; `failure` is an override's ending (a thrown failure) after them,
    `hang` an override's hang after them."""
    events: list[bytes] = []
    tool_index: dict[int, int] = {}
    streamed: set[int] = set()
    content = False
    finish: Finish | None = None
    usage: bytes | None = None
    for chunk in chunks:
        if isinstance(chunk, TextDelta | ReasoningDelta) and chunk.text:
            key = "content" if isinstance(chunk, TextDelta) else "reasoning_content"
            events.append(_delta({key: chunk.text}))
        elif isinstance(chunk, ToolCallDelta):
            wire_index = tool_index.setdefault(chunk.index, len(tool_index))
            events.append(
                _delta(
                    {
                        "tool_calls": [
                            {
                                "index": wire_index,
                                "id": chunk.id,
                                "type": "function",
                                "function": {"name": chunk.name, "arguments": chunk.arguments_delta},
                            }
                        ]
                    }
                )
            )
        elif isinstance(chunk, BlockEnd) and chunk.index not in streamed:
            block = chunk.block
            if isinstance(block, TextBlock) and block.text:
                events.append(_delta({"content": block.text}))
            elif isinstance(block, ReasoningBlock) and block.text:
                events.append(_delta({"reasoning_content": block.text}))
            elif isinstance(block, ToolCallBlock):
                wire_index = tool_index.setdefault(chunk.index, len(tool_index))
                call = {"name": block.name, "arguments": block.arguments}
                events.append(
                    _delta(
                        {
                            "tool_calls": [
                                {"index": wire_index, "id": block.id, "type": "function", "function": call}
                            ]
                        }
                    )
                )
        elif isinstance(chunk, UsageChunk):
            usage = _usage(chunk)
        elif isinstance(chunk, Finish):
            finish = chunk
        if isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta):
            streamed.add(chunk.index)
        content = content or bool(events)
    if finish is not None and isinstance(finish.reason, FinishError):
        failure = finish.reason.failure
    if failure is not None and failure.code == FailureCode.MALFORMED_RESPONSE:
        events.append(b"{not json")
        return WireReply(events=tuple(events), done=False, failure=failure)
    if failure is not None and failure.code not in (*ERROR_STATUS, FailureCode.EMPTY_RESPONSE):
        return WireReply(events=(*events, b'{"choices":[]}'), done=False, failure=failure)
    if failure is not None and failure.code != FailureCode.EMPTY_RESPONSE:
        if not events and not hang:
            status = failure.status or ERROR_STATUS.get(failure.code, 500)
            body = _encode({"error": error_object(failure)})
            return WireReply(status=status, headers=_headers(failure), body=body, failure=failure)
        events.append(_encode({"error": error_object(failure)}))
        return WireReply(headers=_headers(failure), events=tuple(events), done=False, failure=failure)
    if hang:
        return WireReply(events=tuple(events), done=False, hang=True)
    if finish is not None:
        reason = finish.provider_reason or _REASONS.get(type(finish.reason), "stop")
        events.append(_delta({}, reason))
    if usage is not None:
        events.append(usage)
    return WireReply(events=tuple(events), done=finish is not None or failure is not None, failure=failure)
