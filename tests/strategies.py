"""Shared Hypothesis strategies for dsh's tests."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

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


# ---------------------------------------------------------------- session log (runtime.session)

from runtime.session import (  # noqa: E402  # the session strategies below need the wire types
    AssistantChunk,
    AssistantChunkData,
    AssistantMessage,
    AssistantMessageData,
    Block,
    Event,
    Message,
    MessageSource,
    StepData,
    StepEnd,
    StepStart,
    TextDelta,
    ToolCall,
    ToolCallData,
    ToolResult,
    ToolResultData,
    TurnEnd,
    TurnEndData,
    TurnEndReason,
    TurnStart,
    TurnStartData,
    UserMessage,
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
        UserMessage(
            data=Message(
                id=f"u{turn}",
                role="user",
                source=MessageSource(kind="user"),
                content=(Block(type="text", text=spec.prompt),),
            ),
            surface_op="append",
        ),
    ]
    chunk_start = first_seq + len(events)
    events += [
        AssistantChunk(data=AssistantChunkData(turn=turn, step=1, chunk=TextDelta(index=0, text=text)))
        for text in spec.chunks
    ]
    calls = tuple(
        Block(type="tool-call", id=f"call-{turn}-{i}", name=name, arguments="{}")
        for i, (name, _) in enumerate(spec.tools)
    )
    events.append(
        AssistantMessage(
            data=AssistantMessageData(
                turn=turn,
                step=1,
                message=Message(
                    id=f"a{turn}",
                    role="assistant",
                    source=MessageSource(kind="model", provider="p", model="m"),
                    content=(Block(type="text", text="".join(spec.chunks)), *calls),
                ),
            ),
            surface_op="append",
            source_event_seqs=tuple(range(chunk_start, chunk_start + len(spec.chunks))),
        )
    )
    for block, (_, result) in zip(calls, spec.tools, strict=True):
        call_seq = first_seq + len(events)
        events.append(
            ToolCall(
                data=ToolCallData(
                    turn=turn, step=1, call_id=block.id or "", name=block.name or "", arguments="{}"
                )
            )
        )
        if result is not None:
            events.append(
                ToolResult(
                    data=ToolResultData(
                        turn=turn,
                        step=1,
                        message=Message(
                            id=f"r-{block.id}",
                            role="user",
                            source=MessageSource(kind="tool", call_id=block.id),
                            content=(
                                Block(
                                    type="tool-result",
                                    tool_call_id=block.id,
                                    is_error=False,
                                    content=(Block(type="text", text=result),),
                                ),
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
