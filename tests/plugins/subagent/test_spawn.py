"""Spawned children, end to end through the `subagent` tool: a fresh, linked session whose answer comes back as
the tool result; concurrent siblings; a failing child; the depth limit; a parent's cancellation."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from dsh.plugins.subagent import DELEGATION_CONTEXT
from dsh.runtime.agent import AGENTS, EVENT, AgentEvent
from dsh.runtime.llm import LlmRequest, StreamChunk, TextBlock, UserMessage
from dsh.runtime.session import STORE, SessionStoreProtocol
from tests.runtime.agent.harness import OPTIONS, ScriptedAdapter, calls, event_types, failure, text

from .harness import by_spawning_call, data_of, spawned, subagent_host

pytestmark = pytest.mark.anyio


def delegate(
    call_id: str, prompt: str, label: str = "Do a task", tool: str = "subagent"
) -> tuple[str, str, str]:
    return (call_id, tool, json.dumps({"description": label, "prompt": prompt}))


def result_texts(store: SessionStoreProtocol, session_id: str) -> list[tuple[str, bool]]:
    out = []
    for data in data_of(store, session_id, "tool/result"):
        block = data["message"]["content"][0]
        out.append((block["content"][0]["text"], block["isError"]))
    return out


async def test_a_spawned_child_is_fresh_linked_and_answers_as_the_tool_result(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(
        [calls(delegate("c1", "Count the files.", "Count files")), text("there are 3"), text("Three files.")]
    )
    with subagent_host(tmp_path, adapter) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            outcome = await parent.run("How many files?")
        store = ctx.get(STORE)
        (child,) = store.children(parent.id)
        child_types = event_types(store, child.id)
        results = result_texts(store, parent.id)
        descriptor = data_of(store, child.id, "subagent/descriptor")
    assert outcome.text == "Three files."
    assert results == [("there are 3", False)]
    assert (child.parent_id, child.delegation_depth, child.seed_length, child.spawned_by) == (
        parent.id,
        1,
        None,
        spawned(1, 1, "c1"),
    )
    assert descriptor == [{"version": 2, "mode": "one-shot", "provider": "spawn", "label": "Count files"}]
    assert child_types[:5] == [
        "agent/inbox/spliced",
        "turn/start",
        "agent/inbox/spliced",
        "subagent/descriptor",
        "step/start",
    ]
    # the child saw only its prompt (and the runtime context that tells it it is a subagent)
    child_request = adapter.requests[1]
    assert child_request.session_id == child.id
    assert (child_request.provider, child_request.model) == (OPTIONS.provider, OPTIONS.model)
    first, snapshot = child_request.messages
    assert isinstance(first, UserMessage)
    assert first.content == (TextBlock("Count the files."),)
    assert isinstance(snapshot, UserMessage)
    assert isinstance(DELEGATION_CONTEXT.text, str)
    assert DELEGATION_CONTEXT.text in str(snapshot.content)
    assert adapter.unserved() == {}


async def test_two_concurrent_children_of_one_step_are_each_linked_to_their_own_call(tmp_path: Path) -> None:
    both_running = anyio.Event()
    arrived: list[str] = []

    def meets_sibling(answer: str) -> Callable[[LlmRequest], AsyncIterator[StreamChunk]]:
        async def stream(request: LlmRequest) -> AsyncIterator[StreamChunk]:
            # each child waits until both are mid-call: they really run at the same time
            arrived.append(answer)
            if len(arrived) == 2:
                both_running.set()
            await both_running.wait()
            for chunk in text(answer):
                yield chunk

        return stream

    adapter = ScriptedAdapter(
        scripts={
            "parent": [
                calls(delegate("a", "Task A."), delegate("b", "Task B.")),
                text("both done"),
            ],
            "a": [meets_sibling("answer A")],
            "b": [meets_sibling("answer B")],
        }
    )
    with subagent_host(tmp_path, adapter) as ctx:
        store = ctx.get(STORE)
        adapter.key = by_spawning_call(store)
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            outcome = await parent.run("Do A and B.")
        children = {c.spawned_by.call_id: c for c in store.children(parent.id) if c.spawned_by}
        prompts = {
            call: data_of(store, child.id, "user/message")[0]["content"][0]["text"]
            for call, child in children.items()
        }
        results = result_texts(store, parent.id)
    assert outcome.text == "both done"
    assert sorted(children) == ["a", "b"]
    assert {c.spawned_by for c in children.values()} == {spawned(1, 1, "a"), spawned(1, 1, "b")}
    assert prompts == {"a": "Task A.", "b": "Task B."}
    assert results == [("answer A", False), ("answer B", False)]
    assert adapter.unserved() == {}


async def test_a_child_that_fails_returns_an_error_result_and_the_parent_goes_on(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(
        [
            calls(delegate("c1", "Try it.")),
            calls(("k1", "echo", '{"text": "partial"}')),  # the child works a step, then its model fails
            failure("SERVER", "the provider is down"),
            text("I will do it myself."),
        ]
    )
    from tests.runtime.agent.harness import echo_tool

    with subagent_host(tmp_path, adapter, tool_list=[echo_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            outcome = await parent.run("Go.")
        store = ctx.get(STORE)
        (child,) = store.children(parent.id)
        results = result_texts(store, parent.id)
        child_end = data_of(store, child.id, "turn/end")
        codes = [d["error"]["code"] for d in data_of(store, parent.id, "tool/result")]
    assert outcome.kind == "completed"
    assert outcome.text == "I will do it myself."
    assert child_end[0]["reason"]["kind"] == "error"
    assert results == [("Error: subagent run failed\nDiagnostic: SERVER: the provider is down", True)]
    assert codes == ["SUBAGENT_FAILED"]


async def test_the_depth_limit_refuses_deeper_delegation_with_an_error_result(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(
        [
            calls(delegate("c1", "Delegate again.")),  # parent, depth 0
            calls(delegate("c2", "And again.")),  # child, depth 1: a grandchild would be depth 2
            text("could not delegate"),
            text("done"),
        ]
    )
    with subagent_host(tmp_path, adapter, max_depth=1) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            outcome = await parent.run("Go.")
        store = ctx.get(STORE)
        (child,) = store.children(parent.id)
        grandchildren = store.children(child.id)
        child_results = result_texts(store, child.id)
        codes = [d["error"]["code"] for d in data_of(store, child.id, "tool/result")]
    assert outcome.text == "done"
    assert grandchildren == []
    assert codes == ["DEPTH_LIMIT"]
    assert child_results == [
        (
            "Error: subagent depth 2 exceeds max_depth 1 (the subagent service's config): this agent is already "
            "a subagent at depth 1; do the task here instead of delegating it",
            True,
        )
    ]


async def test_max_depth_zero_turns_delegation_off(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([calls(delegate("c1", "Task.")), text("ok")])
    with subagent_host(tmp_path, adapter, max_depth=0) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            await parent.run("Go.")
        store = ctx.get(STORE)
        assert store.children(parent.id) == []
        (result,) = result_texts(store, parent.id)
    assert "delegation is turned off" in result[0]


async def test_cancelling_the_parent_cancels_its_children(tmp_path: Path) -> None:
    child_streaming = anyio.Event()
    streaming: list[str | None] = []

    async def hangs(request: LlmRequest) -> AsyncIterator[StreamChunk]:
        streaming.append(request.session_id)
        if len(streaming) == 2:
            child_streaming.set()
        await anyio.sleep_forever()
        for chunk in text("never"):  # unreachable: it only makes this an async generator
            yield chunk

    adapter = ScriptedAdapter(
        scripts={
            "parent": [calls(delegate("a", "Task A."), delegate("b", "Task B."))],
            "a": [hangs],
            "b": [hangs],
        }
    )
    with subagent_host(tmp_path, adapter) as ctx:
        store = ctx.get(STORE)
        adapter.key = by_spawning_call(store)
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            async with anyio.create_task_group() as group:
                group.start_soon(parent.run, "Go.")
                await child_streaming.wait()  # both children are mid-call
                group.cancel_scope.cancel()
            children = store.children(parent.id)
            child_ends = [data_of(store, c.id, "turn/end") for c in children]
            parent_end = data_of(store, parent.id, "turn/end")
            codes = [d["error"]["code"] for d in data_of(store, parent.id, "tool/result")]
    assert len(children) == 2
    assert child_ends == [[{"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "parent"}}}]] * 2
    assert codes == ["ABORTED", "ABORTED"]
    assert parent_end == [{"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}]


async def test_a_subagent_runs_only_inside_an_agent_listens_to_its_events(tmp_path: Path) -> None:
    """The child's events reach `agent/event` listeners like any agent's, with the child as the agent."""
    adapter = ScriptedAdapter([calls(delegate("c1", "Task.")), text("child answer"), text("ok")])
    seen: list[tuple[str, str]] = []
    with subagent_host(tmp_path, adapter) as ctx:

        async def on_event(event: AgentEvent) -> None:
            if event.event.type == "subagent/descriptor":
                seen.append((event.agent.id, event.agent.parent.id if event.agent.parent else ""))

        ctx.on(EVENT, on_event)
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            await parent.run("Go.")
        (child,) = ctx.get(STORE).children(parent.id)
    assert seen == [(child.id, parent.id)]
