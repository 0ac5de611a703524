"""Fork children seeded from a recorded parent: the recorded fork replayed through `subagent_fork` (same
arguments, same answer, same child shapes), and a fork from the imported recording's third turn with tool calls in
flight. A fork copies no event: the child inherits the parent's prefix through its last `turn/end` by reference."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from dsh.runtime.agent import AGENTS
from dsh.runtime.llm import LlmRequest, StreamChunk, TextBlock, UserMessage, decode_chunk
from dsh.runtime.session import STORE, export_jsonl, import_jsonl
from dsh.runtime.tools import Tool, ToolContext
from tests.runtime.agent.harness import OPTIONS, ScriptedAdapter, calls, text
from tests.runtime.llm.harness import recorded_calls

from .harness import FORK_FIXTURE, by_spawning_call, data_of, event_rows, spawned, subagent_host

pytestmark = pytest.mark.anyio

PARENT_LOG = FORK_FIXTURE / "session.jsonl"
CHILD_LOG = FORK_FIXTURE / "session.1.jsonl"
FORK_CALL = "call_00_sAtKUseRzHRBvL4CF7XF1334"
# what dsh does not log itself (the original's plugins' events) and the chunk stream, whose rows differ by packing
NOT_COMPARED = {
    "agent/inbox/spliced",
    "approval/policy",
    "session/title",
    "request/context",
    "assistant/chunk",
}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def streams(path: Path, keys: list[tuple[int, int]]) -> list[list[StreamChunk]]:
    """The recorded model calls of `path` at (turn, step) `keys`, in order, as chunk streams."""
    by_key = {call.key: call for call in recorded_calls(path)}  # a later call of one key wins: the log's own
    return [[decode_chunk(json.dumps(chunk)) for chunk in by_key[key].chunks] for key in keys]


def user_texts(path: Path) -> list[str]:
    return [
        e["data"]["content"][0]["text"]
        for e in lines(path)
        if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"
    ]


def exported(store: Any, session_id: str) -> list[dict[str, Any]]:
    out = io.BytesIO()
    export_jsonl(store, session_id, out, pack=False)
    return [json.loads(line) for line in out.getvalue().decode().splitlines()]


def compared(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"] not in NOT_COMPARED and not e["type"].endswith("-chunks")]


async def test_the_recorded_fork_replays_through_subagent_fork(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(
        scripts={
            "parent": streams(PARENT_LOG, [(1, 1), (2, 1), (2, 2)]),
            FORK_CALL: streams(CHILD_LOG, [(2, 1)]),
        }
    )
    first, second = user_texts(PARENT_LOG)
    with subagent_host(tmp_path, adapter) as ctx:
        store = ctx.get(STORE)
        adapter.key = by_spawning_call(store)
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            assert (await parent.run(first)).text == "OK"
            outcome = await parent.run(second)
        (child,) = store.children(parent.id)
        ours_parent = exported(store, parent.id)
        ours_child = exported(store, child.id)
        child_rows = event_rows(store, child.id)
        child_length = store.length(child.id)
    assert outcome.text == "PARENT_DONE"
    assert adapter.unserved() == {}
    recorded_parent, recorded_child = lines(PARENT_LOG), lines(CHILD_LOG)

    # the parent's tool/call and tool/result carry what the recording's do
    def tool_events(events: list[dict[str, Any]]) -> list[Any]:
        out = []
        for e in events:
            if e["type"] == "tool/call":
                out.append({k: e["data"][k] for k in ("callId", "name", "arguments")})
            elif e["type"] == "tool/result":
                out.append(e["data"]["message"]["content"])
        return out

    assert tool_events(ours_parent[1:]) == tool_events(recorded_parent[1:])
    assert tool_events(ours_parent[1:])[1] == [
        {
            "type": "tool-result",
            "toolCallId": FORK_CALL,
            "content": [{"type": "text", "text": "MARMALADE"}],
            "isError": False,
        }
    ]

    # the child's header links it as the recording's does: seeded through the parent's first turn/end
    def first_end(events: list[dict[str, Any]]) -> int:
        return int(next(e["seq"] for e in events if e["type"] == "turn/end"))

    header, recorded_header = ours_child[0], recorded_child[0]
    assert recorded_header["seedLength"] == first_end(recorded_parent[1:]) + 1
    assert header["seedLength"] == first_end(ours_parent[1:]) + 1
    assert (header["parentSession"], header["delegationDepth"]) == (
        parent.id,
        recorded_header["delegationDepth"],
    )
    assert header["spawnedBy"] == {"turn": 2, "step": 1, "callId": FORK_CALL}
    seed = header["seedLength"]
    assert ours_child[1 : seed + 1] == ours_parent[1 : seed + 1]
    # its own events have the recording's shapes: descriptor, the resumed request header, the answer
    own = ours_child[seed + 1 :]
    recorded_own = [
        e for e in recorded_child[1:] if e.get("seq", e.get("seq0")) >= recorded_header["seedLength"]
    ]
    assert compared(own) == compared(recorded_own)
    descriptor = next(e["data"] for e in own if e["type"] == "subagent/descriptor")
    assert descriptor == next(e["data"] for e in recorded_own if e["type"] == "subagent/descriptor")
    assert [e["data"]["reason"] for e in own if e["type"] == "request/header"] == ["resume"]
    # no event copied: the child's rows are its own events only
    assert child_rows == child_length - seed


async def test_a_fork_from_the_recorded_parents_third_turn_inherits_completed_turns_only(
    tmp_path: Path,
) -> None:
    child_ran = anyio.Event()

    async def probe(arguments: dict[str, Any], context: ToolContext) -> str:
        await child_ran.wait()  # in flight while the fork child runs
        return "probed"

    async def child_answers(request: LlmRequest) -> AsyncIterator[StreamChunk]:
        child_ran.set()
        for chunk in text("MARMALADE"):
            yield chunk

    fork_args = json.dumps({"description": "Recall codeword", "prompt": "What is the project codeword?"})
    adapter = ScriptedAdapter(
        scripts={
            "parent": [calls(("f1", "subagent_fork", fork_args), ("p1", "probe", "{}")), text("done")],
            "f1": [child_answers],
        }
    )
    tool = Tool("probe", "Probe.", {"type": "object"}, probe)
    with subagent_host(tmp_path, adapter, tool_list=[tool]) as ctx:
        store = ctx.get(STORE)
        adapter.key = by_spawning_call(store)
        parent_id = import_jsonl(store, PARENT_LOG).id
        recorded_rows = event_rows(store)
        async with ctx.get(AGENTS).resume(parent_id, OPTIONS) as parent:
            outcome = await parent.run("Turn three: ask a fork for the codeword.")
        (child,) = store.children(parent_id)
        parent_events = list(store.events(parent_id))
        child_events = list(store.events(child.id))
        rows = (event_rows(store), event_rows(store, parent_id), event_rows(store, child.id))
        child_request = next(r for r in adapter.requests if r.session_id == child.id)
    assert outcome.text == "done"
    last_completed = max(e.seq for e in parent_events if e.type == "turn/end" and '"turn":2' in e.data)
    assert (child.seed_length, child.delegation_depth, child.spawned_by) == (
        last_completed + 1,
        1,
        spawned(3, 1, "f1"),
    )
    seed = last_completed + 1
    assert child_events[:seed] == parent_events[:seed]
    assert '"turn":3' in next(e.data for e in parent_events[seed:] if e.type == "turn/start")
    assert all('"turn":3' not in e.data for e in child_events[:seed] if e.type.startswith("turn/"))
    # the child's model saw the completed turns and its own prompt, never the turn in flight
    seen = [
        b.text
        for m in child_request.messages
        if isinstance(m, UserMessage)
        for b in m.content
        if isinstance(b, TextBlock)
    ]
    assert "What is the project codeword?" in seen
    assert not any("Turn three" in t for t in seen)
    # no event copied: the import's rows, the parent's new ones and the child's own, nothing more
    total, parent_rows, child_rows = rows
    assert parent_rows == len(parent_events)
    assert child_rows == len(child_events) - seed
    assert total == parent_rows + child_rows
    assert parent_rows > recorded_rows


async def test_a_fork_before_any_completed_turn_starts_fresh(tmp_path: Path) -> None:
    fork_args = json.dumps({"description": "Fork early", "prompt": "Say hi."})
    adapter = ScriptedAdapter([calls(("f1", "subagent_fork", fork_args)), text("hi"), text("done")])
    with subagent_host(tmp_path, adapter) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            await parent.run("Fork now.")
        store = ctx.get(STORE)
        (child,) = store.children(parent.id)
        descriptor = data_of(store, child.id, "subagent/descriptor")
    assert (child.seed_length, child.inherits, child.parent_id, child.delegation_depth) == (
        None,
        False,
        parent.id,
        1,
    )
    assert descriptor == [{"version": 2, "mode": "one-shot", "provider": "fork", "label": "Fork early"}]
