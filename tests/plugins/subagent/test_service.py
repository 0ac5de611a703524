"""The provider registry: registration and removal with their lifecycle events, rollback when an added-listener
fails, containment when a removed-listener fails, and the refusals of `start`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from dsh.plugins import subagent
from dsh.plugins.subagent import (
    PROVIDER_ADDED,
    PROVIDER_REMOVED,
    SUBAGENTS,
    SubagentError,
    SubagentProvider,
    SubagentRequest,
    SubagentRun,
)
from dsh.runtime.agent import AGENTS
from dsh.runtime.kernel import ConfigError, Context, ListenerError, ListenerFailure, NoConfig, Plugin
from tests.runtime.agent.harness import OPTIONS, ScriptedAdapter, host

from .harness import spawned


@asynccontextmanager
async def never(request: SubagentRequest) -> AsyncIterator[SubagentRun]:
    raise AssertionError("a refused start never reaches the provider")
    yield  # pragma: no cover


def provider(name: str, inherits: bool = False) -> SubagentProvider:
    return SubagentProvider(name=name, inherits_parent_context=inherits, start=never)


def providing(*providers: SubagentProvider, name: str = "providers") -> Plugin[NoConfig]:
    def apply(ctx: Context, config: NoConfig) -> None:
        for p in providers:
            ctx.get(SUBAGENTS).register(p)

    return Plugin(name=name, apply=apply, needs=(SUBAGENTS,))


def service(failures: list[ListenerFailure] | None = None, max_depth: int = 3) -> Context:
    ctx = Context(on_listener_error=None if failures is None else failures.append)
    ctx.plugin(subagent.plugin, {"max_depth": max_depth})
    return ctx


def names(ctx: Context) -> list[str]:
    return [p.name for p in ctx.get(SUBAGENTS).providers()]


def test_register_in_order_refuse_duplicates_and_unload_restores_the_registry() -> None:
    ctx = service()
    events: list[tuple[str, str]] = []

    async def added(p: SubagentProvider) -> None:
        events.append(("added", p.name))

    async def removed(p: SubagentProvider) -> None:
        events.append(("removed", p.name))

    ctx.on(PROVIDER_ADDED, added)
    ctx.on(PROVIDER_REMOVED, removed)
    loaded = ctx.plugin(providing(provider("spawn"), provider("fork", True)))
    assert names(ctx) == ["spawn", "fork"]
    assert ctx.get(SUBAGENTS).get("fork") is not None
    with pytest.raises(
        SubagentError, match='a subagent provider named "spawn" is already registered'
    ) as taken:
        ctx.get(SUBAGENTS).register(provider("spawn"))
    assert taken.value.code == "DUPLICATE_PROVIDER"
    loaded.unload()
    assert names(ctx) == []
    assert events == [("added", "spawn"), ("added", "fork"), ("removed", "fork"), ("removed", "spawn")]


def test_a_failing_added_listener_rolls_the_registration_back() -> None:
    ctx = service()
    heard: list[str] = []

    async def refuse(p: SubagentProvider) -> None:
        raise RuntimeError("cannot mount")

    async def removed(p: SubagentProvider) -> None:
        heard.append(p.name)

    ctx.on(PROVIDER_ADDED, refuse)
    ctx.on(PROVIDER_REMOVED, removed)
    with pytest.raises(ListenerError, match='"subagent/provider-added": RuntimeError: cannot mount'):
        ctx.plugin(providing(provider("spawn")))
    assert names(ctx) == []
    assert heard == ["spawn"]  # the rollback told the listeners that had heard it added
    assert [p.id for p in ctx.loaded_plugins()] == ["subagent"]


def test_a_failing_removed_listener_is_contained_and_later_listeners_still_hear() -> None:
    failures: list[ListenerFailure] = []
    ctx = service(failures)
    heard: list[str] = []

    async def broken(p: SubagentProvider) -> None:
        raise RuntimeError("listener bug")

    async def removed(p: SubagentProvider) -> None:
        heard.append(p.name)

    ctx.on(PROVIDER_REMOVED, broken)
    ctx.on(PROVIDER_REMOVED, removed)
    ctx.plugin(providing(provider("spawn"))).unload()
    assert names(ctx) == []
    assert heard == ["spawn"]
    assert [(f.event, str(f.error)) for f in failures] == [("subagent/provider-removed", "listener bug")]


def test_max_depth_must_be_a_non_negative_integer() -> None:
    with pytest.raises(ConfigError, match=r"max_depth"):
        service(max_depth=-1)


@pytest.mark.anyio
async def test_start_refuses_an_unknown_provider_and_a_delegation_too_deep(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter()) as ctx:
        ctx.plugin(subagent.plugin, {"max_depth": 1})
        ctx.plugin(providing(provider("spawn")))
        subagents = ctx.get(SUBAGENTS)
        registry = ctx.get(AGENTS)
        async with registry.create(OPTIONS) as top, registry.create(OPTIONS, parent=top) as child:
            with pytest.raises(
                SubagentError, match='no subagent provider registered for "acp"; registered: spawn'
            ) as none:
                async with subagents.start("acp", SubagentRequest("x", top, spawned(1, 1, "c"))):
                    pass
            assert none.value.code == "NO_PROVIDER"
            with pytest.raises(SubagentError, match="subagent depth 2 exceeds max_depth 1") as deep:
                async with subagents.start("spawn", SubagentRequest("x", child, spawned(1, 1, "c"))):
                    pass
            assert deep.value.code == "DEPTH_LIMIT"
