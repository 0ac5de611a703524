"""The mapping from decoded chat-completions chunks to `StreamChunk`s (spec §5, "SSE to StreamChunk"). Pure: no I/O.

Block indexes are assigned in the order blocks first appear, across kinds. One reasoning block and one text block
per response; tool calls are merged by their wire index (id and name arrive on the first delta and are repeated on
every chunk). Within one wire chunk: reasoning, then content, then tool calls. `finish_reason` and `usage` are
stored (the latest usage wins); `[DONE]` ends every open block in opening order, then emits usage, then finish.

The finish agrees with the message whatever the server said: a message holding tool calls finishes `tool-calls` when
the server sent `stop` (or nothing), and one without finishes as `stop` when the server sent `tool_calls` (several
servers and proxies do either); the server's own value is kept beside it as `provider_reason`. `length` and the
error reasons are kept as sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dsh.runtime.llm import (
    BlockEnd,
    BlockStart,
    BlockType,
    CallId,
    FailureCode,
    Finish,
    FinishError,
    FinishMaxTokens,
    FinishReason,
    FinishStop,
    FinishToolCalls,
    LlmCallError,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)

from ._errors import failure_from_stream_error
from ._wire import WireChunk, WireToolCall, WireUsage

__all__ = ["EMPTY_RESPONSE_MESSAGE", "ChunkMapper", "finish_reason", "map_usage"]

EMPTY_RESPONSE_MESSAGE = "model returned a completed response with no content"

_REASONS: dict[str, FinishReason] = {
    "stop": FinishStop(),
    "tool_calls": FinishToolCalls(),
    "length": FinishMaxTokens(),
}


def finish_reason(wire: str | None) -> FinishReason:
    """`stop`, `tool_calls`, `length` map to their kinds; anything else is an error coded `UPPER(reason)`."""
    if wire is None:
        return FinishStop()
    known = _REASONS.get(wire)
    if known is not None:
        return known
    return FinishError(LlmFailure(message=f"model stopped: {wire}", code=wire.upper()))


def map_usage(usage: WireUsage) -> TokenUsage:
    """Disjoint counts: input excludes cache reads (`cached_tokens`, or DeepSeek's `prompt_cache_hit_tokens`)."""
    details = usage.prompt_tokens_details
    cache_read = (
        details.cached_tokens
        if details is not None and details.cached_tokens is not None
        else usage.prompt_cache_hit_tokens
    )
    reasoning = usage.completion_tokens_details
    return TokenUsage(
        input_tokens=usage.prompt_tokens - (cache_read or 0),
        output_tokens=usage.completion_tokens,
        cache_read_tokens=cache_read,
        reasoning_tokens=reasoning.reasoning_tokens if reasoning is not None else None,
    )


@dataclass
class _Block:
    kind: BlockType
    parts: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""

    def assemble(self) -> TextBlock | ReasoningBlock | ToolCallBlock:
        text = "".join(self.parts)
        if self.kind == "text":
            return TextBlock(text)
        if self.kind == "reasoning":
            return ReasoningBlock(text)
        return ToolCallBlock(CallId(self.id), self.name, text)


class ChunkMapper:
    """Turns the decoded chunks of one response into stream chunks; `done()` on `[DONE]`."""

    __slots__ = ("_blocks", "_calls", "_finish", "_reasoning", "_text", "_usage")

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}  # harness index -> block, in opening order
        self._reasoning: int | None = None
        self._text: int | None = None
        self._calls: dict[int, int] = {}  # wire tool-call index -> harness index
        self._finish: str | None = None
        self._usage: WireUsage | None = None

    def _open(self, kind: BlockType, out: list[StreamChunk]) -> int:
        index = len(self._blocks)
        self._blocks[index] = _Block(kind)
        out.append(BlockStart(index=index, block_type=kind))
        return index

    def feed(self, chunk: WireChunk) -> list[StreamChunk]:
        if chunk.error is not None:
            raise LlmCallError(failure_from_stream_error(chunk.error))
        out: list[StreamChunk] = []
        if chunk.usage is not None:
            self._usage = chunk.usage
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            if choice.finish_reason is not None:
                self._finish = choice.finish_reason
            delta = choice.delta
            if delta is None:
                continue
            reasoning = delta.reasoning_content or delta.reasoning
            if reasoning:
                index = self._reasoning
                if index is None:
                    index = self._reasoning = self._open("reasoning", out)
                self._blocks[index].parts.append(reasoning)
                out.append(ReasoningDelta(index=index, text=reasoning))
            if delta.content:
                index = self._text
                if index is None:
                    index = self._text = self._open("text", out)
                self._blocks[index].parts.append(delta.content)
                out.append(TextDelta(index=index, text=delta.content))
            if delta.tool_calls:
                for position, call in enumerate(delta.tool_calls):
                    self._tool_call(position if call.index is None else call.index, call, out)
        return out

    def _tool_call(self, wire_index: int, call: WireToolCall, out: list[StreamChunk]) -> None:
        function = call.function
        arguments = (function.arguments if function is not None else None) or ""
        index = self._calls.get(wire_index)
        if index is None:
            name = function.name if function is not None else None
            if not call.id or not name:
                missing = " and ".join(
                    what for what, value in (("an id", call.id), ("a function name", name)) if not value
                )
                raise LlmCallError(
                    LlmFailure(
                        message=f"the first delta of tool call {wire_index} lacks {missing}",
                        code=FailureCode.MALFORMED_RESPONSE,
                    )
                )
            index = self._calls[wire_index] = self._open("tool-call", out)
            block = self._blocks[index]
            block.id = call.id
            block.name = name
        block = self._blocks[index]
        block.parts.append(arguments)
        out.append(
            ToolCallDelta(index=index, id=CallId(block.id), name=block.name, arguments_delta=arguments)
        )

    def done(self) -> list[StreamChunk]:
        """`[DONE]`: end every open block in opening order, then usage, then the finish."""
        out: list[StreamChunk] = [BlockEnd(index=i, block=b.assemble()) for i, b in self._blocks.items()]
        if self._usage is not None:
            out.append(UsageChunk(map_usage(self._usage)))
        reason = finish_reason(self._finish)
        provider_reason = None
        if isinstance(reason, FinishStop) and self._calls:
            reason, provider_reason = FinishToolCalls(), self._finish
        elif isinstance(reason, FinishToolCalls) and not self._calls:
            reason, provider_reason = FinishStop(), self._finish
        if isinstance(reason, FinishStop) and not self._blocks:
            reason = FinishError(LlmFailure(message=EMPTY_RESPONSE_MESSAGE, code=FailureCode.EMPTY_RESPONSE))
        out.append(Finish(reason=reason, provider_reason=provider_reason))
        return out
