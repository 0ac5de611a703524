"""BlockAssembler: round trips over generated streams, and a clear refusal of every protocol violation."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given

from dsh.runtime.llm import AssistantBlock as Block
from dsh.runtime.llm import (
    BlockAssembler,
    BlockEnd,
    BlockStart,
    CallId,
    ChunkProtocolError,
    Finish,
    FinishMaxTokens,
    FinishStop,
    MessageId,
    ModelSource,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    decode_chunk,
    encode_chunk,
)
from tests.strategies import valid_calls


@given(valid_calls())
def test_a_well_formed_stream_assembles_to_its_blocks(
    call: tuple[tuple[Block, ...], list[StreamChunk]],
) -> None:
    blocks, chunks = call
    assembler = BlockAssembler()
    for chunk in chunks:
        assert not assembler.done
        assembler.feed(chunk)
    assert assembler.done
    assert assembler.blocks() == blocks
    assert assembler.open_blocks() == ()
    assert assembler.finish == chunks[-1]


@given(valid_calls())
def test_every_chunk_round_trips_through_json(call: tuple[tuple[Block, ...], list[StreamChunk]]) -> None:
    for chunk in call[1]:
        assert decode_chunk(encode_chunk(chunk)) == chunk


@given(valid_calls())
def test_partial_blocks_grow_into_the_final_blocks(call: tuple[tuple[Block, ...], list[StreamChunk]]) -> None:
    blocks, chunks = call
    assembler = BlockAssembler()
    for chunk in chunks[:-1]:
        assembler.feed(chunk)
        for partial in assembler.partial_blocks():
            final = next(
                b for b in blocks if type(b) is type(partial) and _text(b).startswith(_text(partial))
            )
            assert final is not None


def _text(block: Block) -> str:
    return block.arguments if isinstance(block, ToolCallBlock) else block.text


def fed(chunks: list[StreamChunk]) -> BlockAssembler:
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.feed(chunk)
    return assembler


def test_message_keeps_blocks_in_index_order_and_usage() -> None:
    assembler = fed(
        [
            BlockStart(index=1, block_type="text"),
            BlockStart(index=0, block_type="reasoning"),
            TextDelta(index=1, text="Hi"),
            ReasoningDelta(index=0, text="greet"),
            BlockEnd(index=1, block=TextBlock("Hi")),
            BlockEnd(index=0, block=ReasoningBlock("greet")),
            UsageChunk(TokenUsage(input_tokens=1, output_tokens=2)),
            Finish(reason=FinishStop()),
        ]
    )
    message = assembler.message(id=MessageId("a"), provider="p", model="m")
    assert message.content == (ReasoningBlock("greet"), TextBlock("Hi"))
    assert message.source == ModelSource(provider="p", model="m")
    assert assembler.usage == TokenUsage(input_tokens=1, output_tokens=2)


def test_a_max_tokens_finish_drops_tool_calls_from_the_message() -> None:
    call = ToolCallBlock(CallId("c"), "bash", '{"comm')
    assembler = fed(
        [
            BlockStart(index=0, block_type="text"),
            BlockEnd(index=0, block=TextBlock("Let me run it.")),
            BlockStart(index=1, block_type="tool-call"),
            ToolCallDelta(index=1, id=CallId("c"), name="bash", arguments_delta='{"comm'),
            BlockEnd(index=1, block=call),
            Finish(reason=FinishMaxTokens()),
        ]
    )
    assert assembler.blocks()[1] == call
    message = assembler.message(id=MessageId("a"), provider="p", model="m")
    assert message.content == (TextBlock("Let me run it."),)


def test_interrupted_content_keeps_visible_text_and_reasoning_only() -> None:
    assembler = fed(
        [
            BlockStart(index=0, block_type="reasoning"),
            ReasoningDelta(index=0, text="hmm"),
            BlockStart(index=1, block_type="tool-call"),
            ToolCallDelta(index=1, id=CallId("c"), name="bash", arguments_delta="{"),
            BlockStart(index=2, block_type="text"),
            TextDelta(index=2, text="par"),
        ]
    )
    assert assembler.interrupted_content() == (ReasoningBlock("hmm"), TextBlock("par"))
    blank = BlockAssembler()
    blank.feed(BlockStart(index=0, block_type="text"))
    blank.feed(TextDelta(index=0, text=" \n"))
    assert blank.interrupted_content() == ()


def test_message_before_finish_is_refused() -> None:
    with pytest.raises(ChunkProtocolError, match="the call has not finished"):
        BlockAssembler().message(id=MessageId("a"), provider="p", model="m")


START = BlockStart(index=0, block_type="text")


@pytest.mark.parametrize(
    ("chunks", "message"),
    [
        ([TextDelta(index=0, text="x")], "chunk 0: text-delta for block 0, which is never started"),
        ([START, START], "chunk 1: block-start reuses index 0"),
        ([BlockStart(index=-1, block_type="text")], "chunk 0: block-start with negative index -1"),
        (
            [START, ReasoningDelta(index=0, text="x")],
            "chunk 1: reasoning-delta for block 0, which is a text block",
        ),
        (
            [START, BlockEnd(index=0, block=TextBlock("")), TextDelta(index=0, text="x")],
            "chunk 2: text-delta for block 0, which is already ended",
        ),
        (
            [START, BlockEnd(index=0, block=ReasoningBlock("x"))],
            "chunk 1: block-end carries a reasoning block for block 0, opened as text",
        ),
        (
            [START, TextDelta(index=0, text="ab"), BlockEnd(index=0, block=TextBlock("abc"))],
            "chunk 2: block-end of block 0 disagrees with its deltas",
        ),
        ([START, Finish(reason=FinishStop())], "chunk 1: finish while blocks 0 are open"),
        (
            [Finish(reason=FinishStop()), UsageChunk(TokenUsage(input_tokens=0, output_tokens=0))],
            "usage chunk after finish",
        ),
        (
            [
                BlockStart(index=0, block_type="tool-call"),
                ToolCallDelta(index=0, id=CallId("a"), name="x", arguments_delta=""),
                ToolCallDelta(index=0, id=CallId("b"), arguments_delta=""),
            ],
            "chunk 2: tool-call-delta id 'b' for block 0, whose id is 'a'",
        ),
        (
            [
                BlockStart(index=0, block_type="tool-call"),
                ToolCallDelta(index=0, id=CallId("a"), name="x", arguments_delta=""),
                ToolCallDelta(index=0, id=CallId("a"), name="y", arguments_delta=""),
            ],
            "chunk 2: tool-call-delta name 'y' for block 0, named 'x'",
        ),
    ],
)
def test_protocol_violations_are_refused_with_their_position(chunks: list[StreamChunk], message: str) -> None:
    assembler = BlockAssembler()
    for chunk in chunks[:-1]:
        assembler.feed(chunk)
    with pytest.raises(ChunkProtocolError) as caught:
        assembler.feed(chunks[-1])
    assert message in str(caught.value)
    assert caught.value.index == len(chunks) - 1


def test_block_types_encode_with_the_original_wire_names() -> None:
    assert msgspec.json.decode(encode_chunk(START)) == {
        "type": "block-start",
        "index": 0,
        "blockType": "text",
    }
    delta = ToolCallDelta(index=1, id=CallId("c"), arguments_delta="")
    assert msgspec.json.decode(encode_chunk(delta)) == {
        "type": "tool-call-delta",
        "index": 1,
        "id": "c",
        "argumentsDelta": "",
    }
