"""Shared Hypothesis strategies for dsh's tests."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import strategies as st

from dsh.runtime.llm import (
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


# ---------------------------------------------------------------- session log (dsh.runtime.session)

from dsh.runtime.llm import (  # noqa: E402
    AssistantMessage,  # the session strategies below need it
    MessageId,
    ModelSource,
    ToolResultBlock,
    ToolSource,
    UserMessage,  # beside the session strategies that use it
)
from dsh.runtime.llm import TextBlock as LlmTextBlock  # noqa: E402  # beside the session strategies that use it
from dsh.runtime.llm import TextDelta as LlmTextDelta  # noqa: E402  # beside the session strategies that use it
from dsh.runtime.session import (  # noqa: E402  # the session strategies below need the wire types
    AssistantChunk,
    AssistantChunkData,
    AssistantMessageData,
    AssistantMessageEvent,
    Event,
    StepData,
    StepEnd,
    StepStart,
    ToolCall,
    ToolCallData,
    ToolResultData,
    ToolResultEvent,
    TurnEnd,
    TurnEndData,
    TurnEndReason,
    TurnStart,
    TurnStartData,
    UserMessageEvent,
)


@dataclass(frozen=True)
class TurnSpec:
    """The shape of one generated turn: the prompt, the streamed text split into chunks, and the tool calls the
    model makes (each with its result text, or None to leave it unanswered)."""

    prompt: str
    chunks: tuple[str, ...]
    tools: tuple[tuple[str, str | None], ...]
    closed: bool = True


def turn_events(turn: int, first_seq: int, spec: TurnSpec) -> list[Event]:
    """The events of one turn, as the loop would append them starting at `first_seq`."""
    events: list[Event] = [
        TurnStart(data=TurnStartData(turn=turn)),
        StepStart(data=StepData(turn=turn, step=1)),
        UserMessageEvent(
            data=UserMessage(id=MessageId(f"u{turn}"), content=(LlmTextBlock(spec.prompt),)),
            surface_op="append",
        ),
    ]
    chunk_start = first_seq + len(events)
    events += [
        AssistantChunk(data=AssistantChunkData(turn=turn, step=1, chunk=LlmTextDelta(index=0, text=text)))
        for text in spec.chunks
    ]
    calls = tuple(
        ToolCallBlock(CallId(f"call-{turn}-{i}"), name, "{}") for i, (name, _) in enumerate(spec.tools)
    )
    events.append(
        AssistantMessageEvent(
            data=AssistantMessageData(
                turn=turn,
                step=1,
                message=AssistantMessage(
                    id=MessageId(f"a{turn}"),
                    source=ModelSource(provider="p", model="m"),
                    content=(LlmTextBlock("".join(spec.chunks)), *calls),
                ),
            ),
            surface_op="append",
            source_event_seqs=tuple(range(chunk_start, chunk_start + len(spec.chunks))),
        )
    )
    for block, (_, result) in zip(calls, spec.tools, strict=True):
        call_seq = first_seq + len(events)
        events.append(
            ToolCall(data=ToolCallData(turn=turn, step=1, call_id=block.id, name=block.name, arguments="{}"))
        )
        if result is not None:
            events.append(
                ToolResultEvent(
                    data=ToolResultData(
                        turn=turn,
                        step=1,
                        message=UserMessage(
                            id=MessageId(f"r-{block.id}"),
                            source=ToolSource(block.id),
                            content=(
                                ToolResultBlock(tool_call_id=block.id, content=(LlmTextBlock(result),)),
                            ),
                        ),
                    ),
                    surface_op="append",
                    source_event_seqs=(call_seq,),
                )
            )
    if spec.closed:
        events.append(StepEnd(data=StepData(turn=turn, step=1)))
        events.append(TurnEnd(data=TurnEndData(turn=turn, reason=TurnEndReason(kind="completed"))))
    return events


_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
turn_specs = st.builds(
    TurnSpec,
    prompt=_text,
    chunks=st.lists(_text, max_size=6).map(tuple),
    tools=st.lists(st.tuples(st.sampled_from(["bash", "read"]), st.none() | _text), max_size=2).map(tuple),
    closed=st.booleans(),
)
closed_turn_specs = turn_specs.map(lambda spec: TurnSpec(spec.prompt, spec.chunks, spec.tools, closed=True))


@dataclass(frozen=True)
class PromptContribution:
    """What one independent plugin registers: uniquely named entries, at orders no other plugin uses."""

    sections: tuple[tuple[str, float, str], ...]
    contexts: tuple[tuple[str, float, str], ...]
    variables: tuple[tuple[str, str | None], ...]
    tools: tuple[str, ...]


@st.composite
def prompt_contributions(draw: st.DrawFn) -> list[PromptContribution]:
    """1-5 independent prompt plugins' contributions (see PromptContribution)."""
    count = draw(st.integers(min_value=1, max_value=5))
    entries = draw(st.integers(min_value=count, max_value=count * 4))
    # Unique orders, away from the built-ins' -100 and 0: ties would (rightly) keep registration order.
    orders = draw(
        st.lists(
            st.integers(-10_000, 10_000).filter(lambda o: o not in (-100, 0)),
            unique=True,
            min_size=entries,
            max_size=entries,
        )
    )
    tool_names = draw(
        st.lists(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), unique=True, max_size=count * 3)
    )
    text = st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=20)
    result = []
    for index in range(count):
        mine = range(index, entries, count)
        result.append(
            PromptContribution(
                sections=tuple((f"s{i}", orders[i] / 4, draw(text)) for i in mine if i % 2 == 0),
                contexts=tuple((f"c{i}", orders[i] / 4, draw(text)) for i in mine if i % 2 == 1),
                variables=tuple((f"v{i}", draw(text | st.none())) for i in mine),
                tools=tuple(tool_names[index::count]),
            )
        )
    return result


# -- the model transport (dsh.runtime.llm) -------------------------------------------------------------------------


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


# ---------------------------------------------------------------- agent loop scripts

AgentStep = tuple[str, int]
"""One scripted model call of the agent loop: ("text", 0), ("calls", n tool calls) or ("fail", 0) (a SERVER
failure that a retry policy answers with a new attempt)."""


@st.composite
def agent_turns(draw: st.DrawFn) -> list[list[AgentStep]]:
    """Turns of scripted model calls: each turn is zero or more tool-calling or failing calls, then a text answer."""
    turns: list[list[AgentStep]] = []
    for _ in range(draw(st.integers(1, 3))):
        steps = draw(
            st.lists(
                st.one_of(st.tuples(st.just("calls"), st.integers(1, 3)), st.just(("fail", 0))), max_size=3
            )
        )
        turns.append([*steps, ("text", 0)])
    return turns


# ---------------------------------------------------------------- fields dsh does not model

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
"""Any JSON value (numbers in the range every JSON reader keeps exactly)."""

extra_keys = st.text(max_size=6).map(lambda name: f"x_{name}")
"""Keys no wire struct models (every modelled field is camelCase, without an underscore)."""


@st.composite
def with_extra_fields(draw: st.DrawFn, value: object) -> object:
    """`value` (decoded JSON) with extra keys added to some of its objects, at any depth."""
    if isinstance(value, list):
        return [draw(with_extra_fields(item)) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: draw(with_extra_fields(item)) for key, item in value.items()}
    for key, extra in draw(st.dictionaries(extra_keys, json_values, max_size=2)).items():
        out.setdefault(key, extra)
    return out
