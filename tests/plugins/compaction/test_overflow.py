"""Overflow recovery: a `CONTEXT_WINDOW_EXCEEDED` finish compacts and retries in the same step, logging what the
original logged in its `compaction-recovery` recording, field by field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.plugins.compaction import COMPACTION_PURPOSE, Config
from dsh.runtime.agent import AGENTS
from dsh.runtime.llm import CallKey
from dsh.runtime.session import STORE, write_jsonl
from dsh.runtime.tools import Tool, ToolContext
from tests.runtime.agent.harness import OPTIONS, ScriptedAdapter, calls, failure, text

from .harness import MeteredScript, blob_tool, compaction_host

pytestmark = pytest.mark.anyio

RECORDING = (
    Path(__file__).resolve().parents[3] / "fixtures" / "harness" / "compaction-recovery" / "session.jsonl"
)
OVERFLOW = "CONTEXT_WINDOW_EXCEEDED"


def recorded() -> list[dict[str, Any]]:
    return [json.loads(line) for line in RECORDING.read_text().splitlines()[1:]]


def bash_tool() -> Tool:
    async def execute(arguments: dict[str, Any], context: ToolContext) -> str:
        return "alpha\n"

    return Tool(name="bash", description="Run a command.", parameters={"type": "object"}, execute=execute)


def from_overflow(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events from the overflowing finish on, with each run of chunks folded into one."""
    start = next(i for i, e in enumerate(events) if OVERFLOW in json.dumps(e["data"]))
    out: list[dict[str, Any]] = []
    for event in events[start:]:
        if event["type"] == "assistant/chunk" and out and out[-1]["type"] == "assistant/chunk":
            continue
        out.append(event)
    return out


def shape(value: Any) -> Any:
    """Keys all the way down (lists by their first element): what "the same fields" means."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


async def test_overflow_recovery_logs_the_recorded_bracket_and_retries_in_the_same_step(
    tmp_path: Path,
) -> None:
    original = recorded()
    prompt = original[4]["data"]["content"][0]["text"]
    call = original[10]["data"]["chunk"]["block"]
    summary = original[20]["data"]["summary"][0]["text"]
    adapter = ScriptedAdapter(
        [
            calls((call["id"], "bash", call["arguments"])),
            failure(OVERFLOW, "snapshot request exceeded the model context window"),
            text(summary),
            text("COMPACTION RECOVERED"),
        ]
    )
    with compaction_host(tmp_path, adapter, Config(calibrate=False), tool_list=[bash_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run(prompt)
            messages = agent.messages()
        store = ctx.get(STORE)
        exported = b"".join(write_jsonl(store.info(agent.id), store.events(agent.id), pack=False))
        ours = [json.loads(line) for line in exported.splitlines()[1:]]
    assert outcome.kind == "completed"
    assert outcome.text == "COMPACTION RECOVERED"
    theirs, mine = from_overflow(original), from_overflow(ours)
    assert (
        [e["type"] for e in mine]
        == [e["type"] for e in theirs]
        == [
            "assistant/chunk",
            "compaction/start",
            "compaction/summary",
            "user/message",
            "compaction/end",
            "assistant/chunk",
            "assistant/message",
            "step/end",
            "turn/end",
        ]
    )
    start, summary_event, checkpoint, end = mine[1:5]
    # dsh adds the call's key to the original's summary record (so a replay reads it instead of re-deriving it)
    assert summary_event["data"].pop("callKey") == {
        "turn": 1,
        "step": 2,
        "attempt": 1,
        "purpose": "compaction",
    }
    for their, my in zip(theirs[1:5], mine[1:5], strict=True):
        assert shape(my["data"]) == shape(their["data"]), my["type"]
        assert my.keys() == their.keys(), my["type"]
    # the replacement shadows the prompt only: the newest call and its result stay verbatim
    prompt_seq = next(e["seq"] for e in ours if e["type"] == "user/message")
    assert checkpoint["surfaceOp"] == {"op": "replace", "start": prompt_seq, "end": prompt_seq}
    assert checkpoint["sourceEventSeqs"] == [start["seq"], summary_event["seq"], prompt_seq]
    assert summary_event["data"]["shadowedSeqs"] == [prompt_seq]
    assert summary_event["data"]["shadowedRange"] == {"start": prompt_seq, "end": prompt_seq}
    assert summary_event["data"]["summary"] == original[20]["data"]["summary"]
    assert summary_event["data"]["rawOutput"] == original[20]["data"]["rawOutput"]
    assert checkpoint["data"]["source"]["compactionId"] == start["data"]["compactionId"]
    assert checkpoint["data"]["content"][0] == original[21]["data"]["content"][0]
    assert checkpoint["data"]["content"][2] == original[21]["data"]["content"][2]
    assert start["data"]["turn"] == end["data"]["turn"] == 1
    # the retry is attempt 2 of the same step, and it carries the checkpoint
    keys = [r.call for r in adapter.requests]
    assert keys == [
        CallKey(turn=1, step=1),
        CallKey(turn=1, step=2),
        CallKey(turn=1, step=2, attempt=1, purpose=COMPACTION_PURPOSE),
        CallKey(turn=1, step=2, attempt=2),
    ]
    assert adapter.requests[3].messages == messages[:3]
    kinds = [type(m).__name__ for m in messages]
    assert kinds == ["UserMessage", "AssistantMessage", "UserMessage", "AssistantMessage"]


async def test_recovery_runs_once_per_step_by_default(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(
        [
            calls(("c1", "bash", "{}")),
            failure(OVERFLOW),
            text("a shorter account of the long request"),
            failure(OVERFLOW, "still too long"),
        ]
    )
    with compaction_host(tmp_path, adapter, Config(calibrate=False), tool_list=[bash_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("x" * 2000)
        types = [e.type for e in ctx.get(STORE).events(agent.id)]
    assert outcome.kind == "error"
    assert outcome.failure is not None
    assert (outcome.failure.code, outcome.failure.message) == (OVERFLOW, "still too long")
    assert types.count("compaction/start") == 1
    assert types[-2:] == ["step/end", "turn/end"]


async def test_recovery_does_not_retry_when_nothing_can_be_compacted(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([failure(OVERFLOW)])
    with compaction_host(tmp_path, adapter, Config(calibrate=False)) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("x" * 100_000)
        types = [e.type for e in ctx.get(STORE).events(agent.id)]
    assert outcome.kind == "error"
    assert outcome.failure is not None
    assert outcome.failure.code == OVERFLOW
    assert not any(t.startswith("compaction/") for t in types)
    assert len(adapter.requests) == 1


async def test_a_failed_summariser_in_recovery_ends_the_turn_with_the_overflow(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([calls(("c1", "bash", "{}")), failure(OVERFLOW), failure("RATE_LIMIT")])
    with compaction_host(tmp_path, adapter, Config(calibrate=False), tool_list=[bash_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("x" * 2000)
        events = list(ctx.get(STORE).events(agent.id))
    assert outcome.kind == "error"
    assert outcome.failure is not None
    assert outcome.failure.code == OVERFLOW
    types = [e.type for e in events]
    assert types[-4:] == ["compaction/start", "compaction/end", "step/end", "turn/end"]
    assert json.loads(events[-3].data)["failure"]["code"] == "RATE_LIMIT"
    assert not any(e.surface_op not in (None, "append") for e in events)


async def test_recovery_can_be_switched_off(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([calls(("c1", "bash", "{}")), failure(OVERFLOW)])
    config = Config(calibrate=False, overflow_recoveries=0)
    with compaction_host(tmp_path, adapter, config, tool_list=[bash_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("x" * 2000)
    assert outcome.kind == "error"
    assert len(adapter.requests) == 2


async def test_a_step_numbers_its_compaction_calls_apart_from_its_attempts(tmp_path: Path) -> None:
    blob = '{"size": 8000, "tag": "%s"}'
    adapter = MeteredScript(
        [
            calls(("c1", "blob", blob % "first")),
            text("done one"),
            calls(("c2", "blob", blob % "second")),
            failure("SERVER", "summariser down"),  # pre-step compaction of turn 2, step 2
            failure(OVERFLOW),  # so step 2 goes out uncompacted and overflows
            text("a summary after all"),  # overflow recovery
            text("done two"),
        ]
    )
    config = Config(context_window=4096, prune=False, calibrate=False)
    with compaction_host(tmp_path, adapter, config, tool_list=[blob_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            outcome = await agent.run("two")
        ends = [json.loads(e.data) for e in ctx.get(STORE).events(agent.id, types=("compaction/end",))]
    assert outcome.kind == "completed"
    assert [r.call for r in adapter.requests[3:]] == [
        CallKey(turn=2, step=2, attempt=1, purpose=COMPACTION_PURPOSE),
        CallKey(turn=2, step=2, attempt=1),
        CallKey(turn=2, step=2, attempt=2, purpose=COMPACTION_PURPOSE),
        CallKey(turn=2, step=2, attempt=2),
    ]
    assert [end.get("failure", {}).get("code") for end in ends] == ["SERVER", None]
