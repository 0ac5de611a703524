"""The adapter against a loopback server streaming DeepSeek-format SSE: every mapping rule of spec §5."""

from __future__ import annotations

import msgspec
import pytest

from dsh.runtime.llm import (
    BlockEnd,
    BlockStart,
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
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from dsh.runtime.llm import CallId as Id

from .helpers import call, collect, usage, wire
from .loopback import Reply, data, loopback, sse

pytestmark = pytest.mark.anyio


async def test_text_only() -> None:
    body = sse(
        wire(content=""),
        wire(content="Hel"),
        wire(content="lo"),
        wire(finish="stop", usage=usage(10, 2, hit=0)),
    )
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert chunks == [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="Hel"),
        TextDelta(index=0, text="lo"),
        BlockEnd(index=0, block=TextBlock("Hello")),
        UsageChunk(TokenUsage(input_tokens=10, output_tokens=2, cache_read_tokens=0)),
        Finish(reason=FinishStop()),
    ]


async def test_reasoning_then_text_in_one_wire_chunk_and_across_chunks() -> None:
    body = sse(
        wire(reasoning=""),
        wire(reasoning="Think"),
        wire(reasoning="ing", content="An"),
        wire(content="swer"),
        wire(finish="stop"),
        wire(no_choices=True, usage=usage(3091, 23, hit=0, reasoning=20)),
    )
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert chunks == [
        BlockStart(index=0, block_type="reasoning"),
        ReasoningDelta(index=0, text="Think"),
        ReasoningDelta(index=0, text="ing"),
        BlockStart(index=1, block_type="text"),
        TextDelta(index=1, text="An"),
        TextDelta(index=1, text="swer"),
        BlockEnd(index=0, block=ReasoningBlock("Thinking")),
        BlockEnd(index=1, block=TextBlock("Answer")),
        UsageChunk(TokenUsage(input_tokens=3091, output_tokens=23, cache_read_tokens=0, reasoning_tokens=20)),
        Finish(reason=FinishStop()),
    ]


async def test_one_tool_call_with_split_arguments_and_an_empty_first_fragment() -> None:
    body = sse(
        wire(reasoning="Run it."),
        wire(tool_calls=[call(0, "", id="call_1", name="bash")]),
        wire(tool_calls=[call(0, '{"command"')]),
        wire(tool_calls=[call(0, ': "ls"}')]),
        wire(finish="tool_calls", usage=usage(100, 9, hit=64, reasoning=3)),
    )
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)

    def d(text: str) -> ToolCallDelta:
        return ToolCallDelta(index=1, id=Id("call_1"), name="bash", arguments_delta=text)

    assert chunks == [
        BlockStart(index=0, block_type="reasoning"),
        ReasoningDelta(index=0, text="Run it."),
        BlockStart(index=1, block_type="tool-call"),
        d(""),
        d('{"command"'),
        d(': "ls"}'),
        BlockEnd(index=0, block=ReasoningBlock("Run it.")),
        BlockEnd(index=1, block=ToolCallBlock(Id("call_1"), "bash", '{"command": "ls"}')),
        UsageChunk(TokenUsage(input_tokens=36, output_tokens=9, cache_read_tokens=64, reasoning_tokens=3)),
        Finish(reason=FinishToolCalls()),
    ]


async def test_several_tool_calls_merge_by_wire_index_even_interleaved() -> None:
    body = sse(
        wire(content="Two calls."),
        wire(tool_calls=[call(0, '{"a":', id="c0", name="read"), call(1, "", id="c1", name="glob")]),
        wire(tool_calls=[call(1, '{"p":"*"}')]),
        wire(tool_calls=[call(0, "1}")]),
        wire(finish="tool_calls"),
    )
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert chunks == [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="Two calls."),
        BlockStart(index=1, block_type="tool-call"),
        ToolCallDelta(index=1, id=Id("c0"), name="read", arguments_delta='{"a":'),
        BlockStart(index=2, block_type="tool-call"),
        ToolCallDelta(index=2, id=Id("c1"), name="glob", arguments_delta=""),
        ToolCallDelta(index=2, id=Id("c1"), name="glob", arguments_delta='{"p":"*"}'),
        ToolCallDelta(index=1, id=Id("c0"), name="read", arguments_delta="1}"),
        BlockEnd(index=0, block=TextBlock("Two calls.")),
        BlockEnd(index=1, block=ToolCallBlock(Id("c0"), "read", '{"a":1}')),
        BlockEnd(index=2, block=ToolCallBlock(Id("c1"), "glob", '{"p":"*"}')),
        Finish(reason=FinishToolCalls()),
    ]


async def test_a_tool_call_without_an_id_on_its_first_delta_is_malformed() -> None:
    body = sse(wire(tool_calls=[call(0, "{}", name="bash")]), wire(finish="tool_calls"))
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert isinstance(chunks[-1], Finish)
    assert isinstance(chunks[-1].reason, FinishError)
    assert chunks[-1].reason.failure.code == "MALFORMED_RESPONSE"
    assert chunks[-1].reason.failure.message == "the first delta of tool call 0 lacks an id"


@pytest.mark.parametrize(
    ("wire_usage", "expected"),
    [
        (usage(50, 5), TokenUsage(input_tokens=50, output_tokens=5)),
        (usage(50, 5, hit=20), TokenUsage(input_tokens=30, output_tokens=5, cache_read_tokens=20)),
        (
            {"prompt_tokens": 50, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 40}},
            TokenUsage(input_tokens=10, output_tokens=5, cache_read_tokens=40),
        ),
        (
            {
                "prompt_tokens": 50,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 40},
                "prompt_cache_hit_tokens": 7,
                "completion_tokens_details": {"reasoning_tokens": 4},
            },
            TokenUsage(input_tokens=10, output_tokens=5, cache_read_tokens=40, reasoning_tokens=4),
        ),
    ],
)
async def test_usage_mapping_with_cache_hits(wire_usage: dict[str, object], expected: TokenUsage) -> None:
    body = sse(wire(content="x"), wire(finish="stop", usage=wire_usage))
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert chunks[-2] == UsageChunk(expected)


async def test_usage_on_the_finish_chunk_and_a_trailing_usage_only_chunk_the_latest_wins() -> None:
    body = sse(
        wire(content="x"),
        wire(finish="stop", usage=usage(1, 1)),
        wire(no_choices=True, usage=usage(9, 3, hit=4)),
    )
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert [c for c in chunks if isinstance(c, UsageChunk)] == [
        UsageChunk(TokenUsage(input_tokens=5, output_tokens=3, cache_read_tokens=4))
    ]
    assert chunks[-1] == Finish(reason=FinishStop())


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("stop", FinishStop()),
        (None, FinishStop()),
        ("length", FinishMaxTokens()),
        (
            "content_filter",
            FinishError(LlmFailure(message="model stopped: content_filter", code="CONTENT_FILTER")),
        ),
        (
            "insufficient_system_resource",
            FinishError(
                LlmFailure(
                    message="model stopped: insufficient_system_resource", code="INSUFFICIENT_SYSTEM_RESOURCE"
                )
            ),
        ),
    ],
)
async def test_every_finish_reason(reason: str | None, expected: object) -> None:
    body = sse(wire(content="x"), wire(finish=reason))
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert chunks[-1] == Finish(reason=expected)  # type: ignore[arg-type]  # parametrised FinishReason values


async def test_stop_with_no_blocks_is_an_empty_response_after_usage() -> None:
    body = sse(wire(content=""), wire(finish="stop", usage=usage(0, 0)))
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert chunks == [
        UsageChunk(TokenUsage(input_tokens=0, output_tokens=0)),
        Finish(
            reason=FinishError(
                LlmFailure(
                    message="model returned a completed response with no content", code="EMPTY_RESPONSE"
                )
            )
        ),
    ]


async def test_sse_framing_comments_crlf_multiline_and_byte_splits() -> None:
    event = data(wire(content="é☃"))
    body = (
        b": keep-alive\r\n\r\n"
        + event.replace(b"\n", b"\r\n")
        + b'data: {"choices":[{"index":0,\ndata: "delta":{"content":"!"}}]}\n\n'
        + data(wire(finish="stop"))
        + b"data:[DONE]\n\n"
    )
    parts: list[bytes | float] = [body[i : i + 3] for i in range(0, len(body), 3)]
    async with loopback(Reply(parts=parts)) as server:
        chunks = await collect(server.base_url)
    assert [c for c in chunks if isinstance(c, BlockEnd)] == [BlockEnd(index=0, block=TextBlock("é☃!"))]
    assert chunks[-1] == Finish(reason=FinishStop())


async def test_nothing_after_done_is_read() -> None:
    body = sse(wire(content="x"), wire(finish="stop")) + b"data: not json\n\n"
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert chunks[-1] == Finish(reason=FinishStop())


async def test_reasoning_field_named_reasoning_as_vllm_sends_it() -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"reasoning": "hmm"}, "finish_reason": None}]},
        wire(content="ok", finish="stop"),
    )
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert BlockEnd(index=0, block=ReasoningBlock("hmm")) in chunks


@pytest.mark.parametrize(("sent", "provider_reason"), [("tool_calls", None), ("stop", "stop"), (None, None)])
async def test_a_message_with_tool_calls_finishes_tool_calls_whatever_the_server_said(
    sent: str | None, provider_reason: str | None
) -> None:
    # several servers (and LiteLLM's proxy in front of some) send `stop` with tool calls
    body = sse(
        wire(content="let me look"),
        wire(tool_calls=[call(0, '{"a": 1}', id="c1", name="bash")]),
        wire(finish=sent),
    )
    async with loopback(Reply(parts=[body])) as server:
        chunks = await collect(server.base_url)
    assert chunks[-1] == Finish(reason=FinishToolCalls(), provider_reason=provider_reason)


async def test_a_message_without_tool_calls_finishes_stop_though_the_server_said_tool_calls() -> None:
    async with loopback(Reply(parts=[sse(wire(content="x"), wire(finish="tool_calls"))])) as server:
        chunks = await collect(server.base_url)
    assert chunks[-1] == Finish(reason=FinishStop(), provider_reason="tool_calls")


async def test_the_server_reason_is_logged_beside_the_finish() -> None:
    finish = Finish(reason=FinishToolCalls(), provider_reason="stop")
    assert (
        msgspec.json.encode(finish)
        == b'{"type":"finish","reason":{"kind":"tool-calls"},"providerReason":"stop"}'
    )
    assert msgspec.json.decode(msgspec.json.encode(finish), type=StreamChunk) == finish
    assert b"providerReason" not in msgspec.json.encode(Finish(reason=FinishStop()))
