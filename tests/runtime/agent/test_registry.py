"""The agent registry's sessions: a child created for a parent, and forks, plain and delegated, cut at the last
completed turn (never the turn in flight)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from dsh.runtime.agent import AGENTS, Agent
from dsh.runtime.session import STORE, SpawnedBy
from dsh.runtime.tools import Tool, ToolContext

from .harness import OPTIONS, ScriptedAdapter, calls, event_types, host, text

pytestmark = pytest.mark.anyio

CALL = SpawnedBy(turn=2, step=1, call_id="c1")


async def test_a_child_is_one_level_deeper_and_linked_to_its_parent(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter()) as ctx:
        registry = ctx.get(AGENTS)
        async with (
            registry.create(OPTIONS) as parent,
            registry.create(OPTIONS, parent=parent, spawned_by=CALL) as child,
        ):
            assert child.parent is parent
            info = ctx.get(STORE).info(child.id)
    assert (info.parent_id, info.delegation_depth, info.spawned_by, info.seed_length) == (
        parent.id,
        1,
        CALL,
        None,
    )


async def test_a_delegated_fork_from_inside_a_tool_call_inherits_completed_turns_only(tmp_path: Path) -> None:
    """The parent is in its second turn with a tool call in flight: the fork stops at the first turn's end."""
    forked: dict[str, Any] = {}

    async def fork_here(arguments: dict[str, Any], context: ToolContext) -> str:
        parent: Agent = context.agent
        spawned = SpawnedBy(turn=context.turn, step=context.step, call_id=context.call_id)
        async with parent.registry.fork(parent.id, OPTIONS, parent=parent, spawned_by=spawned) as child:
            forked["info"] = child.info
            forked["messages"] = child.messages()
            outcome = await child.run("what was said?")
        return outcome.text

    tool = Tool("fork_here", "Fork.", {"type": "object"}, fork_here)
    adapter = ScriptedAdapter([text("first"), calls(("c1", "fork_here", "{}")), text("child"), text("done")])
    with host(tmp_path, adapter, tool_list=[tool]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            await parent.run("one")
            outcome = await parent.run("two")
        store = ctx.get(STORE)
        parent_events = list(store.events(parent.id))
        child_events = list(store.events(forked["info"].id))
    assert outcome.text == "done"
    first_end = next(e.seq for e in parent_events if e.type == "turn/end")
    info = forked["info"]
    assert (info.parent_id, info.seed_length, info.delegation_depth, info.spawned_by) == (
        parent.id,
        first_end + 1,
        1,
        SpawnedBy(turn=2, step=1, call_id="c1"),
    )
    assert child_events[: first_end + 1] == parent_events[: first_end + 1]
    assert child_events[first_end + 1].type == "session/end-seed"
    assert [type(m).__name__ for m in forked["messages"]] == ["UserMessage", "AssistantMessage"]
    # the child's turn is numbered after the inherited one
    assert '"turn":2' in next(e.data for e in child_events[first_end + 1 :] if e.type == "turn/start")


async def test_a_delegated_fork_of_a_parent_with_no_completed_turn_starts_empty_but_linked(
    tmp_path: Path,
) -> None:
    with host(tmp_path, ScriptedAdapter([text("child")])) as ctx:
        registry = ctx.get(AGENTS)
        async with registry.create(OPTIONS) as parent:
            async with registry.fork(parent.id, OPTIONS, parent=parent, spawned_by=CALL) as child:
                await child.run("hello")
            with pytest.raises(ValueError, match="cannot fork"):
                async with registry.fork("elsewhere", OPTIONS, parent=parent):
                    pass
        store = ctx.get(STORE)
        info = store.info(child.id)
        types = event_types(store, child.id)
    assert (info.parent_id, info.seed_length, info.delegation_depth, info.spawned_by) == (
        parent.id,
        None,
        1,
        CALL,
    )
    assert types[:2] == ["agent/inbox/spliced", "turn/start"]  # nothing inherited, so no seed to mark


async def test_a_child_cancelled_by_its_parent_logs_aborted_parent(tmp_path: Path) -> None:
    async def stall(request: object) -> Any:
        await anyio.sleep_forever()
        yield  # pragma: no cover

    with host(tmp_path, ScriptedAdapter([stall])) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            with anyio.move_on_after(0.05):
                await agent.run("go", cancelled_by="parent")
        ends = [e.data for e in ctx.get(STORE).events(agent.id, types=("turn/end",))]
    assert ends == ['{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"parent"}}}']
