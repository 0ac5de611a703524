"""The agent inbox: steering queued while a turn runs enters at its next step (and keeps the turn going), a prompt
queued while the agent is idle starts a turn by itself, every queue mutation is an `agent/inbox/spliced` event, and
input that no turn claimed survives the agent's end (a crash) and is claimed on resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from dsh.runtime.agent import AGENTS
from dsh.runtime.llm import SubagentReportSource, TextBlock, UserMessage
from dsh.runtime.session import STORE, SessionStoreProtocol
from dsh.runtime.tools import Tool, ToolContext

from .harness import OPTIONS, ScriptedAdapter, calls, event_types, host, text

pytestmark = pytest.mark.anyio


def _splices(store: SessionStoreProtocol, session_id: str) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in store.events(session_id, types=("agent/inbox/spliced",))]


def _user_texts(messages: tuple[Any, ...]) -> list[str]:
    return [
        block.text
        for message in messages
        if isinstance(message, UserMessage)
        for block in message.content
        if isinstance(block, TextBlock)
    ]


def _steering_tool(said: list[str]) -> Tool:
    """A tool whose call queues steering on its own agent, as a user typing during the turn would."""

    async def execute(arguments: dict[str, Any], context: ToolContext) -> str:
        assert context.agent is not None
        await context.agent.queue(arguments["text"], target="next-step")
        said.append(arguments["text"])
        return "queued"

    return Tool(
        name="steer",
        description="Queue steering.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        execute=execute,
    )


async def test_steering_queued_during_a_step_enters_the_next_one(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([calls(("c1", "steer", '{"text": "also say hi"}')), text("hi")])
    said: list[str] = []
    with host(tmp_path, adapter, tool_list=[_steering_tool(said)]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("start")
        store = ctx.get(STORE)
        types = [t for t in event_types(store, agent.id) if t != "assistant/chunk"]
        splices = _splices(store, agent.id)
    assert outcome.kind == "completed"
    assert said == ["also say hi"]
    # queued during step 1 (after its tool call), claimed before step 2, entering step 2 as a user message
    at = types.index("tool/call")
    assert types[at : at + 6] == [
        "tool/call",
        "agent/inbox/spliced",
        "tool/result",
        "step/end",
        "agent/inbox/spliced",
        "step/start",
    ]
    assert types[at + 6] == "user/message"
    assert [(s["target"], s["start"], s.get("removedCount"), len(s["inserted"])) for s in splices] == [
        ("next-turn", 0, None, 1),
        ("next-turn", 0, 1, 0),
        ("next-step", 0, None, 1),
        ("next-step", 0, 1, 0),
    ]
    second = adapter.requests[1]
    assert _user_texts(second.messages)[-1] == "also say hi"


async def test_steering_after_the_last_step_keeps_the_turn_going(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("first answer"), text("second answer")])
    with host(tmp_path, adapter) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            from dsh.runtime.agent import EVENT, AgentEvent

            async def steer_once(event: AgentEvent) -> None:
                first = len(adapter.requests) == 1
                if event.event.type == "assistant/message" and not agent.pending("next-step") and first:
                    await agent.queue("wait, one more thing", target="next-step")

            ctx.on(EVENT, steer_once)
            outcome = await agent.run("go")
        types = [t for t in event_types(ctx.get(STORE), agent.id) if t != "assistant/chunk"]
    assert outcome.kind == "completed"
    assert outcome.text == "second answer"
    assert types.count("step/start") == 2
    assert types.count("turn/start") == 1
    assert _user_texts(adapter.requests[1].messages)[-1] == "wait, one more thing"


async def test_a_prompt_queued_while_idle_starts_a_turn(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("noted")])
    with host(tmp_path, adapter) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.queue(
                "Background subagent x reported: done",
                source=SubagentReportSource(form="relay", sender_session_id="x"),
            )
            with anyio.fail_after(5):
                await agent.wait_turn_end(1)
        store = ctx.get(STORE)
        users = [json.loads(e.data) for e in store.events(agent.id, types=("user/message",))]
    assert users[0]["source"] == {"kind": "subagent-report", "form": "relay", "senderSessionId": "x"}
    assert _user_texts(adapter.requests[0].messages)[0] == "Background subagent x reported: done"


async def test_an_unclaimed_prompt_survives_the_agent_and_is_claimed_on_resume(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("one"), text("two")])
    with host(tmp_path, adapter) as ctx:
        agents = ctx.get(AGENTS)
        store = ctx.get(STORE)
        async with agents.create(OPTIONS) as agent:
            await agent.run("first")
            await agent.queue("left waiting", wake=False)  # the process ends before any turn claims it
        assert len(adapter.requests) == 1
        assert [i.message.content for i in _reopened_inbox(store, agent.id)] == [(TextBlock("left waiting"),)]
        async with agents.resume(agent.id, OPTIONS) as resumed:
            with anyio.fail_after(5):
                await resumed.wait_turn_end(2)
        types = event_types(store, agent.id)
    assert _user_texts(adapter.requests[1].messages)[-1] == "left waiting"
    seed = types.index("session/end-seed")
    assert types[seed + 1 : seed + 3] == ["turn/start", "agent/inbox/spliced"]


async def test_an_unclaimed_item_of_a_crashed_turn_is_claimed_on_resume(tmp_path: Path) -> None:
    started = anyio.Event()

    async def hang(arguments: dict[str, Any], context: ToolContext) -> str:
        assert context.agent is not None
        await context.agent.queue("steer me", target="next-step")
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    tool = Tool(name="hang", description="Hang.", parameters={"type": "object"}, execute=hang)
    adapter = ScriptedAdapter([calls(("c1", "hang", "{}")), text("resumed")])
    with host(tmp_path, adapter, tool_list=[tool]) as ctx:
        agents = ctx.get(AGENTS)
        store = ctx.get(STORE)
        async with agents.create(OPTIONS) as agent, anyio.create_task_group() as group:
            group.start_soon(agent.run, "go")
            await started.wait()
            await agent.log.flush()
            # a crash: the turn's events so far are durable, nothing else is written
            store_events = list(store.events(agent.id))
            group.cancel_scope.cancel()
        crashed = _copy_session(store, agent.id, store_events)
        async with agents.resume(crashed, OPTIONS) as resumed:
            await resumed.queue("and now?")
            with anyio.fail_after(5):
                await resumed.wait_turn_end(2)
        types = [t for t in event_types(store, crashed) if t != "assistant/chunk"]
    assert "turn/end" in types
    # the repaired turn 1 never claimed the steering; turn 2 claims it with the new prompt
    assert _user_texts(adapter.requests[1].messages)[-2:] == ["steer me", "and now?"]


def _reopened_inbox(store: SessionStoreProtocol, session_id: str) -> list[Any]:
    from dsh.runtime.agent import AgentState
    from dsh.runtime.session import LogState

    state = AgentState()
    rules = LogState(folds=(state,))
    for event in store.events(session_id):
        rules.feed(event)
    return [*state.inbox["next-step"], *state.inbox["next-turn"]]


def _copy_session(store: SessionStoreProtocol, session_id: str, events: list[Any]) -> str:
    """A new session holding `events` only: the log a crash at that point leaves."""
    info = store.info(session_id)
    copy = store.create(cwd=info.cwd)
    store.append_events(copy.id, events)
    return copy.id
