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
