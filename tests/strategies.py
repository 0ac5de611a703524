"""Shared Hypothesis strategies for dsh's tests."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import strategies as st

from runtime.llm import (
    AssistantBlock,
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

SERVICE_NAMES = ("alpha", "beta", "gamma")
EVENT_NAMES = ("test/one", "test/two")


@dataclass(frozen=True)
class PluginSpec:
    """What a generated plugin registers when applied: global services and listeners, a scoped service, and a
    nested child plugin with listeners of its own."""

    services: tuple[str, ...]
    listeners: tuple[str, ...]
    scoped_service: str | None
    nested_listeners: tuple[str, ...]


plugin_specs = st.builds(
    PluginSpec,
    services=st.lists(st.sampled_from(SERVICE_NAMES), unique=True, max_size=2).map(tuple),
    listeners=st.lists(st.sampled_from(EVENT_NAMES), max_size=3).map(tuple),
    scoped_service=st.none() | st.sampled_from(SERVICE_NAMES),
    nested_listeners=st.lists(st.sampled_from(EVENT_NAMES), max_size=2).map(tuple),
)


# -- the model transport (runtime.llm) -------------------------------------------------------------------------


_text = st.text(st.characters(codec="utf-8"), max_size=12)
_small = st.integers(min_value=0, max_value=4)
_counts = st.integers(min_value=0, max_value=10**6)

token_usages = st.builds(
    TokenUsage,
    input_tokens=_counts,
    output_tokens=_counts,
    cache_read_tokens=st.none() | _counts,
    cache_write_tokens=st.none() | _counts,
    reasoning_tokens=st.none() | _counts,
)
failures = st.builds(
    LlmFailure,
    message=_text,
    code=st.sampled_from([FailureCode.AUTH, FailureCode.SERVER, FailureCode.TRANSPORT, "HTTP_418"]),
    status=st.none() | st.integers(400, 599),
    provider_retry_after_ms=st.none() | st.integers(1, 10**6),
    request_id=st.none() | _text,
)
finish_reasons: st.SearchStrategy[FinishReason] = st.one_of(
    st.just(FinishStop()),
    st.just(FinishToolCalls()),
    st.just(FinishMaxTokens()),
    st.builds(FinishError, failures),
)
assistant_blocks: st.SearchStrategy[AssistantBlock] = st.one_of(
    st.builds(TextBlock, _text),
    st.builds(ReasoningBlock, _text),
    st.builds(
        ToolCallBlock,
        st.builds(CallId, st.text(min_size=1, max_size=6)),
        st.text(min_size=1, max_size=6),
        _text,
    ),
)
#: Any single chunk, valid or not in context: for protocol-violation tests.
stream_chunks: st.SearchStrategy[StreamChunk] = st.one_of(
    st.builds(BlockStart, index=_small, block_type=st.sampled_from(["text", "reasoning", "tool-call"])),
    st.builds(TextDelta, index=_small, text=_text),
    st.builds(ReasoningDelta, index=_small, text=_text),
    st.builds(
        ToolCallDelta,
        index=_small,
        id=st.just(CallId("c")),
        name=st.none() | st.just("t"),
        arguments_delta=_text,
    ),
    st.builds(BlockEnd, index=_small, block=assistant_blocks),
    st.builds(UsageChunk, token_usages),
    st.builds(Finish, reason=finish_reasons),
)


def _kind(block: AssistantBlock) -> BlockType:
    if isinstance(block, TextBlock):
        return "text"
    return "reasoning" if isinstance(block, ReasoningBlock) else "tool-call"


def _split(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=4)))
    bounds = [0, *cuts, len(text)]
    fragments = [text[a:b] for a, b in itertools.pairwise(bounds)]
    # A block may stream no delta at all (block-end alone carries it), unless it has text to stream.
    return fragments if text or draw(st.booleans()) else []


@st.composite
def valid_calls(draw: st.DrawFn) -> tuple[tuple[AssistantBlock, ...], list[StreamChunk]]:
    """Blocks, and a well-formed chunk stream of them: starts, split deltas interleaved across blocks, ends at any
    point after their deltas, optional usage, then one finish."""
    blocks = tuple(draw(st.lists(assistant_blocks, max_size=5)))
    lanes: list[list[StreamChunk]] = []
    for index, block in enumerate(blocks):
        lane: list[StreamChunk] = [BlockStart(index=index, block_type=_kind(block))]
        if isinstance(block, ToolCallBlock):
            for k, fragment in enumerate(_split(draw, block.arguments)):
                name = block.name if k == 0 or draw(st.booleans()) else None
                lane.append(ToolCallDelta(index=index, id=block.id, name=name, arguments_delta=fragment))
        else:
            delta = TextDelta if isinstance(block, TextBlock) else ReasoningDelta
            lane.extend(delta(index=index, text=fragment) for fragment in _split(draw, block.text))
        lane.append(BlockEnd(index=index, block=block))
        lanes.append(lane)
    order = draw(st.permutations([i for i, lane in enumerate(lanes) for _ in lane]))
    cursors = [0] * len(lanes)
    chunks: list[StreamChunk] = []
    for lane_index in order:
        chunks.append(lanes[lane_index][cursors[lane_index]])
        cursors[lane_index] += 1
    if draw(st.booleans()):
        chunks.append(UsageChunk(draw(token_usages)))
    chunks.append(Finish(reason=draw(finish_reasons)))
    return blocks, chunks
