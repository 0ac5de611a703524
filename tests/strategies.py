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
