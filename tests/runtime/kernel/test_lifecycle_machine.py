"""A state machine over any interleaving of plugin loads, unloads and reloads: the host's registries always equal
those of a fresh host that loaded the surviving plugins in the same order, so an unload restores exactly the prior
state."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from dsh.runtime.kernel import Context, Emit, NoConfig, Plugin, ServiceConflictError, ServiceKey
from tests.strategies import EVENT_NAMES, SERVICE_NAMES, PluginSpec, plugin_specs

KEYS = {name: ServiceKey[str](name) for name in SERVICE_NAMES}
EVENTS = {name: Emit[None](name) for name in EVENT_NAMES}


async def _listener() -> None:
    return None


def build_plugin(index: int, spec: PluginSpec) -> Plugin[NoConfig]:
    def apply(ctx: Context, config: NoConfig) -> None:
        for service in spec.services:
            ctx.provide(KEYS[service], f"p{index}")
        for event in spec.listeners:
            ctx.on(EVENTS[event], _listener)
        if spec.scoped_service is not None:
            ctx.scoped(f"agent{index}").provide(KEYS[spec.scoped_service], f"p{index}-scoped")

        def apply_nested(nested: Context, _: NoConfig) -> None:
            for event in spec.nested_listeners:
                nested.on(EVENTS[event], _listener)

        ctx.plugin(Plugin(name=f"p{index}-nested", apply=apply_nested))

    return Plugin(name=f"p{index}", apply=apply, provides=tuple(KEYS[s] for s in spec.services))


class PluginLifecycle(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ctx = Context()
        self.plugins: list[Plugin[NoConfig]] = []
        self.order: list[int] = []

    @initialize(specs=st.lists(plugin_specs, min_size=2, max_size=5))
    def make_plugins(self, specs: list[PluginSpec]) -> None:
        self.plugins = [build_plugin(i, spec) for i, spec in enumerate(specs)]

    def _provided(self) -> set[ServiceKey[Any]]:
        return {key for i in self.order for key in self.plugins[i].provides}

    @rule(data=st.data())
    def load(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.plugins) - 1))
        if index in self.order:
            return
        plugin = self.plugins[index]
        before = self.ctx.describe()
        if set(plugin.provides) & self._provided():
            try:
                self.ctx.plugin(plugin)
            except ServiceConflictError:
                assert self.ctx.describe() == before
                return
            raise AssertionError("a conflicting provider loaded")
        self.ctx.plugin(plugin)
        self.order.append(index)

    @precondition(lambda self: bool(self.order))
    @rule(data=st.data())
    def unload(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(self.order))
        (loaded,) = [p for p in self.ctx.loaded_plugins() if p.id == f"p{index}"]
        loaded.unload()
        self.order.remove(index)

    @precondition(lambda self: bool(self.order))
    @rule(data=st.data())
    def reload(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(self.order))
        (loaded,) = [p for p in self.ctx.loaded_plugins() if p.id == f"p{index}"]
        loaded.reload()
        self.order.remove(index)
        self.order.append(index)

    @invariant()
    def registries_equal_a_fresh_load_of_the_survivors(self) -> None:
        fresh = Context()
        for index in self.order:
            fresh.plugin(self.plugins[index])
        assert self.ctx.describe() == fresh.describe()


TestPluginLifecycle = PluginLifecycle.TestCase
