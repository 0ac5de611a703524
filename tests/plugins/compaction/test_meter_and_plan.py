"""The meter's estimates and calibration, and the planning rules: cuts never split a tool call from its result, the
kept tail follows `retain_ratio`, the transcript stays within its budget."""

from __future__ import annotations

import math

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from dsh.plugins.compaction import Calibration, TokenMeter
from dsh.plugins.compaction._plan import Node, cut_points, retained_cut, transcript
from dsh.runtime.llm import (
    AssistantBlock,
    AssistantMessage,
    CallId,
    ImageBlock,
    Message,
    MessageId,
    ModelSource,
    PluginSource,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    ToolSource,
    UserMessage,
)

METER = TokenMeter()
SOURCE = ModelSource(provider="p", model="m")


def user(text: str) -> UserMessage:
    return UserMessage(id=MessageId("u"), content=(TextBlock(text),))


def said(text: str, *call_ids: str) -> AssistantMessage:
    blocks: list[AssistantBlock] = [TextBlock(text)]
    blocks += [ToolCallBlock(CallId(c), "tool", "{}") for c in call_ids]
    return AssistantMessage(id=MessageId("a"), content=tuple(blocks), source=SOURCE)


def result(call_id: str, text: str) -> UserMessage:
    block = ToolResultBlock(tool_call_id=CallId(call_id), content=(TextBlock(text),))
    return UserMessage(id=MessageId("r"), content=(block,), source=ToolSource(CallId(call_id)))


def nodes(messages: list[Message]) -> list[Node]:
    out = []
    for seq, message in enumerate(messages):
        kind = "tool/result" if isinstance(message.source, ToolSource) else "user/message"
        if isinstance(message, AssistantMessage):
            kind = "assistant/message"
        encoded = msgspec.json.encode(message).decode()
        out.append(Node.of(seq, kind, encoded, message, METER))
    return out


def test_the_meter_counts_characters_framing_tools_and_images() -> None:
    assert METER.text("") == 0
    assert METER.text("abcd") == 1
    assert METER.text("abcde") == 2
    assert METER.message(user("a" * 40)) == 4 + 10
    image = UserMessage(id=MessageId("i"), content=(ImageBlock(data="x" * 10_000, mime_type="image/png"),))
    assert METER.message(image) == 4 + 1_000
    tool = ToolSchema(name="t", description="d", parameters={"type": "object"})
    assert METER.tools([tool]) == METER.tools([msgspec.to_builtins(tool)])
    assert (
        METER.request(system="s" * 8, tools=[tool], messages=[user("a" * 4)]) == 2 + METER.tools([tool]) + 5
    )
    assert TokenMeter(chars_per_token=2).text("abcd") == 2


def test_calibration_scales_by_what_was_reported_within_bounds() -> None:
    assert Calibration(reported=1_500, estimated=1_000).apply(2_000) == 3_000
    assert Calibration(reported=10, estimated=1_000).ratio == Calibration.MIN_RATIO
    assert Calibration(reported=100_000, estimated=1_000).ratio == Calibration.MAX_RATIO
    assert Calibration(reported=0, estimated=1_000).ratio == 1.0


# A surface: groups in order, each a user message or an assistant message whose calls are answered right after.
groups = st.lists(
    st.one_of(
        st.integers(0, 200).map(lambda n: ("user", n, 0)),
        st.tuples(st.just("calls"), st.integers(0, 200), st.integers(0, 3)),
    ),
    min_size=1,
    max_size=12,
)


def surface(spec: list[tuple[str, int, int]]) -> tuple[list[Message], set[int]]:
    """The messages of `spec` and the indexes where a group starts."""
    messages: list[Message] = []
    starts: set[int] = set()
    for index, (kind, size, count) in enumerate(spec):
        starts.add(len(messages))
        if kind == "user":
            messages.append(user("u" * size))
            continue
        ids = [f"g{index}c{k}" for k in range(count)]
        messages.append(said("a" * size, *ids))
        messages += [result(i, "r" * size * 3) for i in ids]
    return messages, starts


@given(spec=groups, ratio=st.floats(0.05, 0.95))
def test_cuts_fall_between_groups_and_the_tail_is_kept(
    spec: list[tuple[str, int, int]], ratio: float
) -> None:
    messages, starts = surface(spec)
    planned = nodes(messages)
    points = cut_points(planned)
    assert set(points) == starts - {0}
    cut = retained_cut(planned, ratio)
    if not points:
        assert cut == 0
        return
    assert cut in points
    tail = sum(n.tokens for n in planned[cut:])
    total = sum(n.tokens for n in planned)
    # the tail fits the budget, or it is the newest group alone
    assert tail <= ratio * total or cut == max(points)
    # and no longer tail at a cut point would have fitted
    longer = [p for p in points if p < cut]
    assert not longer or sum(n.tokens for n in planned[max(longer) :]) > ratio * total


def test_a_call_without_a_result_does_not_hold_history_together() -> None:
    planned = nodes([user("a"), said("b", "lost"), user("c"), said("d")])
    assert cut_points(planned) == [1, 2, 3]


def test_the_transcript_clips_long_texts_and_keeps_the_newest_within_budget() -> None:
    checkpoint = UserMessage(
        id=MessageId("k"), content=(TextBlock("before"),), source=PluginSource(plugin="compact")
    )
    messages: list[Message] = [checkpoint, said("", "c1"), result("c1", "x" * 10_000)]
    messages += [user(f"message {i} " + "m" * 500) for i in range(20)]
    text = transcript(messages, block_chars=1_000, budget_chars=4_000)
    assert len(text) <= 4_000
    assert text.startswith("Earlier checkpoint:\nbefore")
    assert "message 19" in text
    assert "earlier messages omitted" in text
    whole = transcript(messages[:3], block_chars=1_000, budget_chars=100_000)
    assert "[calls tool {}]" in whole
    assert "Tool result (tool):\n" + "x" * 500 in whole
    assert "characters omitted" in whole
    assert math.isclose(len(whole), len(transcript(messages[:3], block_chars=1_000, budget_chars=10**6)))
