"""`request/context{provider, model, contextWindow?}`: logged right after the step's `request/header` decision, only
when the provider, model or window differs from the session's last one (folded from the log when an agent opens)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from dsh.runtime.agent import AGENTS, REQUEST, RequestConfig, RequestInfo
from dsh.runtime.kernel import Next
from dsh.runtime.session import STORE, RequestContext, SessionStoreProtocol

from .harness import MODEL, OPTIONS, PROVIDER, ScriptedAdapter, event_types, host, text

pytestmark = pytest.mark.anyio


def contexts(store: SessionStoreProtocol, session_id: str) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in store.events(session_id, types=("request/context",))]


async def test_a_known_window_is_logged_once_right_after_the_header(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("a"), text("b")], window=64_000)
    with host(tmp_path, adapter) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            await agent.run("two")
        store = ctx.get(STORE)
        types = event_types(store, agent.id)
        logged = contexts(store, agent.id)
        (stored,) = list(store.events(agent.id, types=("request/context",)))
    at = types.index("request/header")
    assert types[at + 1] == "request/context"
    assert logged == [{"provider": PROVIDER, "model": MODEL, "contextWindow": 64_000}]
    view = stored.view()
    assert isinstance(view, RequestContext)
    assert (view.data.provider, view.data.model, view.data.context_window) == (PROVIDER, MODEL, 64_000)
    assert agent.request_context is not None
    assert agent.request_context.context_window == 64_000


async def test_an_unknown_window_still_names_provider_and_model(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("a")])
    with host(tmp_path, adapter) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
        logged = contexts(ctx.get(STORE), agent.id)
    assert logged == [{"provider": PROVIDER, "model": MODEL}]


async def test_a_model_change_logs_a_new_context_and_a_change_back_another(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("a"), text("b"), text("c")], window=64_000, windows={"big": 1_000_000})
    route = {"model": MODEL}

    async def reroute(config: RequestConfig, info: RequestInfo, next_: Next[RequestConfig]) -> RequestConfig:
        return await next_(dataclasses.replace(config, model=route["model"]))

    with host(tmp_path, adapter) as ctx:
        ctx.on(REQUEST, reroute)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            route["model"] = "big"
            await agent.run("two")
            route["model"] = MODEL
            await agent.run("three")
        logged = contexts(ctx.get(STORE), agent.id)
    assert [(c["model"], c["contextWindow"]) for c in logged] == [
        (MODEL, 64_000),
        ("big", 1_000_000),
        (MODEL, 64_000),
    ]


async def test_a_resumed_agent_folds_the_last_context_and_logs_only_a_change(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("a"), text("b")], window=64_000)
    with host(tmp_path, adapter) as ctx:
        agents = ctx.get(AGENTS)
        async with agents.create(OPTIONS) as agent:
            await agent.run("one")
        async with agents.resume(agent.id, OPTIONS) as resumed:
            assert resumed.request_context == agent.request_context
            await resumed.run("two")  # the header is logged again (`resume`); the context is unchanged
        adapter.window = 32_000
        adapter.steps.append(text("c"))
        async with agents.resume(agent.id, OPTIONS) as again:
            await again.run("three")
        store = ctx.get(STORE)
        logged = contexts(store, agent.id)
        headers = len(list(store.events(agent.id, types=("request/header",))))
    assert headers == 3
    assert [c["contextWindow"] for c in logged] == [64_000, 32_000]


async def test_a_fork_inherits_the_context_and_does_not_repeat_it(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("a"), text("b")], window=64_000)
    with host(tmp_path, adapter) as ctx:
        agents = ctx.get(AGENTS)
        async with agents.create(OPTIONS) as parent:
            await parent.run("one")
        async with agents.fork(parent.id, OPTIONS) as child:
            await child.run("two")
        logged = contexts(ctx.get(STORE), child.id)
    assert len(logged) == 1


async def test_what_the_loop_reads_back_is_the_logs_state_and_no_one_can_assign_it(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("a"), text("b"), text("c")], window=64_000)
    with host(tmp_path, adapter) as ctx:
        agents = ctx.get(AGENTS)
        async with agents.create(OPTIONS) as agent:
            await agent.run("one")
            await agent.run("two")  # the same header: not logged again
            state = agent.state
            assert state.header_written
            assert (agent.header, agent.request_context) == (state.header, state.request_context)
            for name in ("header", "request_context", "snapshot", "state"):
                with pytest.raises(AttributeError):
                    setattr(agent, name, None)
        async with agents.resume(agent.id, OPTIONS) as resumed:
            assert not resumed.state.header_written  # a new run: its first header is a `resume`
            assert resumed.header == agent.header
            await resumed.run("three")
        reasons = [
            json.loads(e.data)["reason"] for e in ctx.get(STORE).events(agent.id, types=("request/header",))
        ]
    assert reasons == ["initial", "resume"]
