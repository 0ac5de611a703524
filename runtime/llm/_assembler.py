"""`BlockAssembler`: folds one call's chunks into its content blocks, usage and finish, checking the protocol.

The loop, the replay engine and `LlmRuntime` share it. A `block-end` carries the assembled block and is
authoritative (replayed compaction streams have no deltas); when deltas were streamed it must agree with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from ._chunks import (
    BlockEnd,
    BlockStart,
    BlockType,
    Finish,
    FinishMaxTokens,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    UsageChunk,
)
from ._content import (
    AssistantBlock,
    AssistantMessage,
    CallId,
    MessageId,
    ModelSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
)
from ._errors import ChunkProtocolError

__all__ = ["BlockAssembler"]


@dataclass
class _Open:
    block_type: BlockType
    parts: list[str] = field(default_factory=list)
    id: CallId | None = None
    name: str | None = None

    def assemble(self) -> AssistantBlock:
        text = "".join(self.parts)
        if self.block_type == "text":
            return TextBlock(text)
        if self.block_type == "reasoning":
            return ReasoningBlock(text)
        return ToolCallBlock(self.id or CallId(""), self.name or "", text)


_DELTA_KIND: dict[type[StreamChunk], BlockType] = {
    TextDelta: "text",
    ReasoningDelta: "reasoning",
    ToolCallDelta: "tool-call",
}

_KIND: dict[type[AssistantBlock], BlockType] = {
    TextBlock: "text",
    ReasoningBlock: "reasoning",
    ToolCallBlock: "tool-call",
}


class BlockAssembler:
    """Feed it every chunk of one call, in order; read the blocks, usage and finish back.

    `feed` raises `ChunkProtocolError` for a chunk that breaks the protocol: a delta or end for a block that is not
    open, a reused index, a delta of the wrong kind, a `block-end` that disagrees with its deltas, a `finish` while
    blocks are open, or anything after `finish`.
    """

    __slots__ = ("_closed", "_count", "_kinds", "_open", "_seen", "finish", "usage")

    def __init__(self) -> None:
        self._kinds: dict[int, BlockType] = {}
        self._open: dict[int, _Open] = {}
        self._closed: dict[int, AssistantBlock] = {}
        self._seen: set[int] = set()
        self._count = 0
        self.usage: TokenUsage | None = None
        self.finish: Finish | None = None

    @property
    def done(self) -> bool:
        """True once the `finish` chunk has been fed."""
        return self.finish is not None

    def feed(self, chunk: StreamChunk) -> None:
        position = self._count
        self._count += 1
        if self.finish is not None:
            raise ChunkProtocolError(f"a {_tag(chunk)} chunk after finish", index=position)
        expected = _DELTA_KIND.get(type(chunk))
        if expected is not None:  # the deltas first: nearly every chunk is one
            delta = cast("TextDelta | ReasoningDelta | ToolCallDelta", chunk)
            block = self._open.get(delta.index)
            if block is None:
                block = self._expect_open(delta.index, position, _tag(chunk))
            if block.block_type != expected:
                raise ChunkProtocolError(
                    f"{_tag(chunk)} for block {delta.index}, which is a {block.block_type} block",
                    index=position,
                )
            if expected == "tool-call":
                call = cast(ToolCallDelta, delta)
                self._merge_call(block, call, position)
                block.parts.append(call.arguments_delta)
            else:
                block.parts.append(cast("TextDelta | ReasoningDelta", delta).text)
        elif isinstance(chunk, BlockStart):
            if chunk.index < 0 or chunk.index in self._seen:
                raise ChunkProtocolError(
                    f"block-start reuses index {chunk.index}"
                    if chunk.index >= 0
                    else f"block-start with negative index {chunk.index}",
                    index=position,
                )
            self._seen.add(chunk.index)
            self._kinds[chunk.index] = chunk.block_type
            self._open[chunk.index] = _Open(chunk.block_type)
        elif isinstance(chunk, BlockEnd):
            block = self._expect_open(chunk.index, position, "block-end")
            kind = _KIND[type(chunk.block)]
            if kind != block.block_type:
                raise ChunkProtocolError(
                    f"block-end carries a {kind} block for block {chunk.index}, opened as {block.block_type}",
                    index=position,
                )
            if (block.parts or block.id is not None) and block.assemble() != chunk.block:
                raise ChunkProtocolError(
                    f"block-end of block {chunk.index} disagrees with its deltas: "
                    f"streamed {block.assemble()!r}, ended with {chunk.block!r}",
                    index=position,
                )
            del self._open[chunk.index]
            self._closed[chunk.index] = chunk.block
        elif isinstance(chunk, UsageChunk):
            self.usage = chunk.usage
        else:
            chunk = cast(Finish, chunk)  # the deltas were taken first
            if self._open and isinstance(chunk.reason, FinishMaxTokens):
                # the output limit cut the stream: a tool call still streaming is discarded (never run), text and
                # reasoning keep what streamed (the original's behaviour)
                for index, block in self._open.items():
                    if block.block_type != "tool-call":
                        self._closed[index] = block.assemble()
                self._open.clear()
            if self._open:
                raise ChunkProtocolError(
                    f"finish while blocks {', '.join(map(str, self._open))} are open", index=position
                )
            self.finish = chunk

    def _expect_open(self, index: int, position: int, what: str) -> _Open:
        block = self._open.get(index)
        if block is None:
            state = "already ended" if index in self._closed else "never started"
            raise ChunkProtocolError(f"{what} for block {index}, which is {state}", index=position)
        return block

    @staticmethod
    def _merge_call(block: _Open, chunk: ToolCallDelta, position: int) -> None:
        if block.id is None:
            block.id = chunk.id
        elif chunk.id != block.id:
            raise ChunkProtocolError(
                f"tool-call-delta id {chunk.id!r} for block {chunk.index}, whose id is {block.id!r}",
                index=position,
            )
        if chunk.name is not None:
            if block.name is None:
                block.name = chunk.name
            elif chunk.name != block.name:
                raise ChunkProtocolError(
                    f"tool-call-delta name {chunk.name!r} for block {chunk.index}, named {block.name!r}",
                    index=position,
                )

    # -- reading -------------------------------------------------------------------------------------------

    def blocks(self) -> tuple[AssistantBlock, ...]:
        """The completed blocks, in index order."""
        return tuple(self._closed[i] for i in sorted(self._closed))

    def open_blocks(self) -> tuple[tuple[int, AssistantBlock], ...]:
        """The blocks still open, as assembled from their deltas so far, in opening order."""
        return tuple((index, block.assemble()) for index, block in self._open.items())

    def partial_blocks(self) -> tuple[AssistantBlock, ...]:
        """Completed and open blocks together, in index order: what has streamed so far."""
        merged: dict[int, AssistantBlock] = dict(self._closed)
        merged.update(self.open_blocks())
        return tuple(merged[i] for i in sorted(merged))

    def interrupted_content(self) -> tuple[AssistantBlock, ...]:
        """What a cancelled call keeps: its text and reasoning blocks (tool calls never), or nothing when none of
        them holds visible (non-whitespace) text."""
        kept = tuple(b for b in self.partial_blocks() if isinstance(b, TextBlock | ReasoningBlock))
        return kept if any(b.text.strip() for b in kept) else ()

    def message(self, *, id: MessageId, provider: str, model: str) -> AssistantMessage:
        """The assistant message of a finished call, with the finish's `replay_state`. A `max-tokens` finish drops
        every tool-call block, and the same decision prunes a per-block `replayState.blocks` list (one entry per
        block started, in index order), so stored provider state lines up with stored content."""
        if self.finish is None:
            raise ChunkProtocolError("the call has not finished", index=self._count)
        blocks = self.blocks()
        state = self.finish.replay_state
        if isinstance(self.finish.reason, FinishMaxTokens):
            blocks = tuple(b for b in blocks if not isinstance(b, ToolCallBlock))
            state = self._pruned(state)
        source = ModelSource(provider=provider, model=model, replay_state=state)
        return AssistantMessage(id=id, content=blocks, source=source)

    def _pruned(self, state: object) -> object:
        if not isinstance(state, dict) or not isinstance(state.get("blocks"), list):
            return state
        entries: list[object] = state["blocks"]
        kinds = [self._kinds[i] for i in sorted(self._kinds)]
        if len(entries) != len(kinds):
            return state  # not one entry per block: not a shape this decision can prune
        return {**state, "blocks": [e for e, kind in zip(entries, kinds, strict=True) if kind != "tool-call"]}


def _tag(chunk: StreamChunk) -> str:
    return str(type(chunk).__struct_config__.tag)
