"""The plugin host: services, scopes, emit and waterfall, plugin load / unload / reload."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any

import msgspec
import pytest

from dsh.runtime.kernel import (
    ConfigError,
    Context,
    DuplicatePluginError,
    Emit,
    ListenerError,
    ListenerFailure,
    MissingServiceError,
    NoConfig,
    Plugin,
    PluginLoadError,
    ServiceConflictError,
    ServiceKey,
    ServiceNotFoundError,
    Waterfall,
)

from .sample_plugins import GREETER, greeter, user

NOTE = Emit[str]("test/note")
SHAPE = Waterfall[list[str], str]("test/shape")
NUMBER = ServiceKey[int]("number")


class _Suspend:
    """An awaitable that suspends once, as waiting on anything real would."""

    def __await__(self) -> Generator[None, None, None]:
        yield


def noop(ctx: Context, config: NoConfig) -> None:
    """A plugin body that registers nothing."""


def test_provide_get_and_dispose() -> None:
    ctx = Context()
    dispose = ctx.provide(NUMBER, 7)
    assert ctx.get(NUMBER) == 7
    with pytest.raises(ServiceConflictError, match='"number"'):
        ctx.provide(NUMBER, 8)
    dispose()
    dispose()  # a second call is harmless
    with pytest.raises(ServiceNotFoundError, match='no service "number"') as caught:
        ctx.get(NUMBER)
    assert isinstance(caught.value, LookupError)
    assert ctx.describe()["services"] == []


def test_scoped_registrations_shadow_only_their_scope() -> None:
    ctx = Context()
    ctx.provide(NUMBER, 1)
    agent = ctx.scoped("agent-a")
    child = agent.scoped("child")
    sibling = ctx.scoped("agent-b")
    agent.provide(NUMBER, 2)
    assert (ctx.get(NUMBER), agent.get(NUMBER), child.get(NUMBER), sibling.get(NUMBER)) == (1, 2, 2, 1)
    agent.dispose()
    assert child.get(NUMBER) == 1
    assert ctx.describe()["services"] == [("", "number", "root")]


def test_disposing_the_owner_disposes_its_scopes() -> None:
    ctx = Context()

    def apply(plugin_ctx: Context, config: NoConfig) -> None:
        plugin_ctx.scoped("agent").provide(NUMBER, 5)

    loaded = ctx.plugin(Plugin(name="scoper", apply=apply))
    assert len(ctx.describe()["services"]) == 1  # type: ignore[arg-type]  # describe() values are plain lists
    loaded.unload()
    assert ctx.describe()["services"] == []


class Bound:
    """A service that hands out views bound to the caller's context."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    def bind_context(self, ctx: Context) -> tuple[Bound, Context]:
        self.seen.append((ctx.plugin_id, ctx.scope.path if ctx.scope else None))
        return (self, ctx)


def test_get_binds_services_that_ask_for_it() -> None:
    ctx = Context()
    key = ServiceKey[Any]("bound")
    service = Bound()
    ctx.provide(key, service)
    assert ctx.scoped("a").get(key)[0] is service
    assert service.seen == [("root", "a")]


@pytest.mark.anyio
async def test_emit_contains_a_failing_listener_and_reports_it() -> None:
    failures: list[ListenerFailure] = []
    ctx = Context(on_listener_error=failures.append)
    heard: list[str] = []

    def plugin_with(name: str, listener: Callable[[str], Awaitable[None]]) -> Plugin[NoConfig]:
        return Plugin(name=name, apply=lambda c, _: (c.on(NOTE, listener), None)[1])

    async def broken(text: str) -> None:
        raise RuntimeError("boom")

    async def record(text: str) -> None:
        heard.append(text)

    ctx.plugin(plugin_with("broken", broken))
    ctx.plugin(plugin_with("recorder", record))
    await ctx.emit(NOTE, "hello")
    assert heard == ["hello"]
    assert [(f.event, f.plugin, str(f.error)) for f in failures] == [("test/note", "broken", "boom")]


@pytest.mark.anyio
async def test_emit_failures_are_logged_with_plugin_and_event_by_default(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx = Context()

    async def broken(text: str) -> None:
        raise RuntimeError("boom")

    ctx.plugin(Plugin(name="noisy", apply=lambda c, _: (c.on(NOTE, broken), None)[1]))
    await ctx.emit(NOTE, "x")
    assert 'listener of plugin "noisy" failed on event "test/note"' in caplog.text


def test_emit_now_contains_failures_and_suspensions_so_later_listeners_still_hear() -> None:
    failures: list[ListenerFailure] = []
    ctx = Context(on_listener_error=failures.append)
    heard: list[str] = []

    async def broken(text: str) -> None:
        raise RuntimeError("boom")

    async def suspends(text: str) -> None:
        await _Suspend()

    async def record(text: str) -> None:
        heard.append(text)

    def listening(name: str, listener: Callable[[str], Awaitable[None]]) -> Plugin[NoConfig]:
        return Plugin(name=name, apply=lambda c, _: (c.on(NOTE, listener), None)[1])

    for name, listener in [("broken", broken), ("suspends", suspends), ("recorder", record)]:
        ctx.plugin(listening(name, listener))
    ctx.emit_now(NOTE, "hello")
    assert heard == ["hello"]
    assert [(f.plugin, type(f.error).__name__) for f in failures] == [
        ("broken", "RuntimeError"),
        ("suspends", "RuntimeError"),
    ]
    assert "suspended" in str(failures[1].error)


def test_emit_now_without_containment_raises_the_first_failure_and_stops() -> None:
    ctx = Context()
    heard: list[str] = []

    async def broken(text: str) -> None:
        raise ValueError("refused")

    async def record(text: str) -> None:
        heard.append(text)

    ctx.plugin(Plugin(name="recorder", apply=lambda c, _: (c.on(NOTE, record), None)[1]))
    ctx.plugin(Plugin(name="strict", apply=lambda c, _: (c.on(NOTE, broken), None)[1]))
    ctx.plugin(Plugin(name="late", apply=lambda c, _: (c.on(NOTE, record), None)[1]))
    with pytest.raises(
        ListenerError, match='plugin "strict" failed on event "test/note": ValueError: refused'
    ):
        ctx.emit_now(NOTE, "x", contain=False)
    assert heard == ["x"]


@pytest.mark.anyio
async def test_waterfall_runs_as_middleware_in_registration_order() -> None:
    ctx = Context()
    calls: list[str] = []

    async def outer(
        value: list[str], arg: str, next_: Callable[[list[str]], Awaitable[list[str]]]
    ) -> list[str]:
        calls.append("outer")
        result = await next_([*value, f"outer:{arg}"])
        return [*result, "post"]

    async def inner(
        value: list[str], arg: str, next_: Callable[[list[str]], Awaitable[list[str]]]
    ) -> list[str]:
        calls.append("inner")
        return await next_([*value, "inner"])

    ctx.on(SHAPE, outer)
    ctx.on(SHAPE, inner)
    assert await ctx.waterfall(SHAPE, ["start"], "a") == ["start", "outer:a", "inner", "post"]
    assert calls == ["outer", "inner"]
    assert await Context().waterfall(SHAPE, ["unchanged"], "a") == ["unchanged"]


@pytest.mark.anyio
async def test_waterfall_listener_that_skips_next_owns_the_result() -> None:
    ctx = Context()
    later_ran = False

    async def owner(value: list[str], arg: str, next_: Any) -> list[str]:
        return ["owned"]

    async def later(value: list[str], arg: str, next_: Any) -> list[str]:
        nonlocal later_ran
        later_ran = True
        return value

    ctx.on(SHAPE, owner)
    ctx.on(SHAPE, later)
    assert await ctx.waterfall(SHAPE, [], "a") == ["owned"]
    assert not later_ran


@pytest.mark.anyio
async def test_waterfall_exception_propagates_naming_the_plugin() -> None:
    ctx = Context()

    async def fine(value: list[str], arg: str, next_: Any) -> list[str]:
        result: list[str] = await next_(value)
        return result

    async def broken(value: list[str], arg: str, next_: Any) -> list[str]:
        raise KeyError("missing")

    ctx.plugin(Plugin(name="fine", apply=lambda c, _: (c.on(SHAPE, fine), None)[1]))
    ctx.plugin(Plugin(name="shaper", apply=lambda c, _: (c.on(SHAPE, broken), None)[1]))
    with pytest.raises(ListenerError, match='plugin "shaper" failed on event "test/shape"') as caught:
        await ctx.waterfall(SHAPE, [], "a")
    assert (caught.value.plugin, caught.value.event) == ("shaper", "test/shape")
    assert isinstance(caught.value.__cause__, KeyError)


@pytest.mark.anyio
async def test_scoped_listeners_hear_only_their_scope() -> None:
    ctx = Context()
    heard: list[str] = []

    async def scoped_listener(text: str) -> None:
        heard.append(f"scoped:{text}")

    async def global_listener(text: str) -> None:
        heard.append(f"global:{text}")

    agent = ctx.scoped("agent")
    agent.on(NOTE, scoped_listener)
    ctx.on(NOTE, global_listener)
    await ctx.emit(NOTE, "root")
    await agent.scoped("child").emit(NOTE, "child")
    await ctx.scoped("other").emit(NOTE, "other")
    assert heard == ["global:root", "scoped:child", "global:child", "global:other"]


def test_unload_restores_every_registry() -> None:
    ctx = Context()
    ctx.provide(NUMBER, 1)
    before = ctx.describe()

    async def listener(text: str) -> None:
        return None

    def apply(plugin_ctx: Context, config: NoConfig) -> None:
        plugin_ctx.provide(GREETER, "hi")
        plugin_ctx.on(NOTE, listener)
        plugin_ctx.scoped("agent").provide(NUMBER, 2)
        plugin_ctx.plugin(Plugin(name="nested", apply=lambda c, _: (c.on(NOTE, listener), None)[1]))

    loaded = ctx.plugin(Plugin(name="busy", apply=apply))
    assert ctx.describe() != before
    loaded.unload()
    assert ctx.describe() == before
    assert not loaded.loaded


def test_missing_service_names_the_service_and_candidates() -> None:
    ctx = Context()
    with pytest.raises(MissingServiceError) as caught:
        ctx.plugin(user)
    assert caught.value.service == "greeter"
    assert "greeter" in caught.value.candidates
    assert 'plugin "greeter-user" needs service "greeter"' in str(caught.value)
    assert ctx.describe()["plugins"] == []


def test_two_plugins_providing_one_service_fail_at_load() -> None:
    ctx = Context()
    ctx.plugin(greeter, {"greeting": "hi"})
    with pytest.raises(ServiceConflictError, match='plugin "second" provides service "greeter"'):
        ctx.plugin(greeter, {"greeting": "yo"}, id="second")
    assert ctx.get(GREETER) == "hi"


def test_duplicate_plugin_id_fails() -> None:
    ctx = Context()
    ctx.plugin(Plugin(name="once", apply=noop))
    with pytest.raises(DuplicatePluginError, match='"once" is already loaded'):
        ctx.plugin(Plugin(name="once", apply=noop))


def test_bad_config_fails_before_apply() -> None:
    ctx = Context()
    with pytest.raises(ConfigError) as caught:
        ctx.plugin(greeter, {"greeting": "hi", "repeat": "twice"})
    assert (caught.value.plugin, caught.value.path) == ("greeter", "$.repeat")
    assert "Expected `int`, got `str`" in str(caught.value)
    with pytest.raises(ConfigError, match="unknown key `colour`"):
        ctx.plugin(greeter, {"greeting": "hi", "colour": "red"})
    assert ctx.describe()["services"] == []


def test_a_failing_apply_leaves_nothing_behind() -> None:
    ctx = Context()

    def apply(plugin_ctx: Context, config: NoConfig) -> None:
        plugin_ctx.provide(NUMBER, 1)
        raise ValueError("half way")

    with pytest.raises(PluginLoadError, match='plugin "half" failed to apply: ValueError: half way'):
        ctx.plugin(Plugin(name="half", apply=apply))
    assert ctx.describe() == Context().describe()


def test_a_plugin_must_provide_what_it_declares() -> None:
    ctx = Context()
    with pytest.raises(PluginLoadError, match='declares it provides "number" but its apply did not'):
        ctx.plugin(Plugin(name="liar", apply=noop, provides=(NUMBER,)))
    assert ctx.describe()["plugins"] == []


class Count(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    value: int


def provide_count(ctx: Context, config: Count) -> None:
    if config.value < 0:
        raise ValueError("negative")
    ctx.provide(NUMBER, config.value)


def test_reload_applies_the_new_config_or_restores_the_old() -> None:
    ctx = Context()
    counter = Plugin(name="counter", apply=provide_count, config=Count, provides=(NUMBER,))
    loaded = ctx.plugin(counter, {"value": 1})
    reloaded = loaded.reload({"value": 2})
    assert ctx.get(NUMBER) == 2
    with pytest.raises(PluginLoadError, match="negative"):
        reloaded.reload({"value": -1})
    assert ctx.get(NUMBER) == 2
    assert [p.id for p in ctx.loaded_plugins()] == ["counter"]
