"""The chat-completions wire: the request body built from an `LlmRequest`, and the streamed chunk as decoded.

History is serialised as spec §5 says: the system prompt first; assistant `content` always a string (`""` without
text, never null), `reasoning_content` passed back whenever the turn had reasoning, `tool_calls` as functions; each
tool-result block its own `{role: tool}` message with text flattened (`(no output)` when empty); images only in user
messages, as data URLs.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dsh.runtime.llm import (
    AssistantMessage,
    FailureCode,
    ImageBlock,
    LlmCallError,
    LlmFailure,
    LlmRequest,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserMessage,
)

__all__ = ["REASONING_EFFORTS", "WireChunk", "build_body", "decode_wire_chunk"]

REASONING_EFFORTS = ("low", "medium", "high", "max", "off")
NO_OUTPUT = "(no output)"


# -- the response --------------------------------------------------------------------------------------------


class WireFunction(msgspec.Struct, frozen=True):
    name: str | None = None
    arguments: str | None = None


class WireToolCall(msgspec.Struct, frozen=True):
    index: int | None = None
    id: str | None = None
    function: WireFunction | None = None


class WireDelta(msgspec.Struct, frozen=True):
    content: str | None = None
    reasoning_content: str | None = None
    # vLLM's newer reasoning parsers and some proxies name the field `reasoning`.
    reasoning: str | None = None
    tool_calls: tuple[WireToolCall, ...] | None = None


class WireChoice(msgspec.Struct, frozen=True):
    index: int = 0
    delta: WireDelta | None = None
    finish_reason: str | None = None


class WireCachedDetails(msgspec.Struct, frozen=True):
    cached_tokens: int | None = None


class WireReasoningDetails(msgspec.Struct, frozen=True):
    reasoning_tokens: int | None = None


class WireUsage(msgspec.Struct, frozen=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_details: WireCachedDetails | None = None
    prompt_cache_hit_tokens: int | None = None
    completion_tokens_details: WireReasoningDetails | None = None


class WireChunk(msgspec.Struct, frozen=True):
    """One `data:` payload of the stream. Fields the mapping does not use are ignored."""

    choices: tuple[WireChoice, ...] = ()
    usage: WireUsage | None = None
    error: Any = None


_chunk_decoder = msgspec.json.Decoder(WireChunk)


def decode_wire_chunk(data: bytes) -> WireChunk:
    """Decode one data payload; bad JSON or a wrong shape is `MALFORMED_RESPONSE`, naming where."""
    try:
        return _chunk_decoder.decode(data)
    except msgspec.DecodeError as error:
        snippet = data[:200].decode("utf-8", "replace")
        raise LlmCallError(
            LlmFailure(
                message=f"the provider sent an invalid stream chunk ({error}): {snippet!r}",
                code=FailureCode.MALFORMED_RESPONSE,
            )
        ) from error


# -- the request ---------------------------------------------------------------------------------------------


def _text_of(blocks: tuple[TextBlock | ImageBlock, ...]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        else:
            # Chat completions takes images only in user messages; a tool's image is named, not sent.
            parts.append(
                f"[image {block.mime_type or '(attachment)'} omitted: images are sent only in user messages]"
            )
    return "\n".join(parts)


def _user_messages(message: UserMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: list[TextBlock | ImageBlock] = []

    def flush() -> None:
        if not pending:
            return
        if all(isinstance(b, TextBlock) for b in pending):
            out.append(
                {"role": "user", "content": "\n".join(b.text for b in pending if isinstance(b, TextBlock))}
            )
        else:
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": b.text}
                        if isinstance(b, TextBlock)
                        else {
                            "type": "image_url",
                            "image_url": {"url": f"data:{b.mime_type};base64,{b.data}"},
                        }
                        for b in pending
                    ],
                }
            )
        pending.clear()

    for block in message.content:
        if isinstance(block, ImageBlock) and (block.data is None or block.mime_type is None):
            raise LlmCallError(
                LlmFailure(
                    message=f"message {message.id} holds an image stored as an attachment reference "
                    f"({(block.attachment or {}).get('attachmentId', 'no id')}), not its bytes; only an inline "
                    "image (data and mimeType) can be sent",
                    code=FailureCode.UNSUPPORTED_CONTENT,
                )
            )
        if isinstance(block, ToolResultBlock):
            flush()
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": block.tool_call_id,
                    "content": _text_of(block.content) or NO_OUTPUT,
                }
            )
        else:
            pending.append(block)
    flush()
    return out


def _assistant_message(message: AssistantMessage) -> dict[str, Any]:
    text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
    reasoning = [b.text for b in message.content if isinstance(b, ReasoningBlock)]
    calls = [b for b in message.content if isinstance(b, ToolCallBlock)]
    wire: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning:
        wire["reasoning_content"] = "".join(reasoning)
    if calls:
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return wire


def build_body(request: LlmRequest) -> dict[str, Any]:
    """The JSON body of `POST /chat/completions` for `request` (streaming, usage included)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        if isinstance(message, UserMessage):
            messages.extend(_user_messages(message))
        else:
            messages.append(_assistant_message(message))
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in request.tools
        ]
    config = request.config
    effort = config.reasoning_effort
    if effort is not None:
        if effort not in REASONING_EFFORTS:
            raise LlmCallError(
                LlmFailure(
                    message=f'unsupported reasoning effort "{effort}"; valid: {", ".join(REASONING_EFFORTS)}',
                    code=FailureCode.UNSUPPORTED_REASONING_EFFORT,
                )
            )
        if effort == "off":
            body["thinking"] = {"type": "disabled"}
        else:
            body["thinking"] = {"type": "enabled"}
            body["reasoning_effort"] = effort
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_tokens"] = config.max_tokens
    if config.stop:
        body["stop"] = list(config.stop)
    return body
