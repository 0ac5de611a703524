"""Summary compaction on `agent/pre-step`: the projection after it, fork and resume over it, and what a failed
summariser call leaves behind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec
import pytest

from dsh.plugins.compaction import (
    CHECKPOINT_PREAMBLE,
    COMPACTION,
    COMPACTION_PURPOSE,
    EMPTY_SUMMARY,
    Config,
)
from dsh.runtime.agent import AGENTS, EVENT, AgentEvent
from dsh.runtime.llm import (
    AssistantMessage,
    CallKey,
    LlmRequest,
    Message,
    PluginSource,
    StreamChunk,
    TextBlock,
    ToolResultBlock,
    UserMessage,
)
from dsh.runtime.session import PROJECTED_TYPES, STORE, project
from tests.runtime.agent.harness import OPTIONS, Step, calls, event_types, failure, text

from .harness import MeteredScript, blob_tool, compaction_host, data, estimate

pytestmark = pytest.mark.anyio

# A 4096-token window compacts past 3276 estimated tokens; two 8000-character results (~2000 tokens each) pass it.
SMALL = Config(context_window=4096, prune=False, calibrate=False)
BLOB = '{"size": 8000, "tag": "%s"}'


def script(*summaries: Step) -> MeteredScript:
    """Turn 1: a blob, then an answer; turn 2: a blob, [the summariser's answers], then an answer."""
    return MeteredScript(
        [
            calls(("c1", "blob", BLOB % "first")),
            text("done one"),
            calls(("c2", "blob", BLOB % "second")),
            *summaries,
            text("done two"),
        ]
    )


def visible_text(message: Message) -> str:
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolResultBlock):
            parts += [p.text for p in block.content if isinstance(p, TextBlock)]
    return "".join(parts)


async def test_the_summary_takes_the_place_of_the_range_and_everything_newer_is_intact(
    tmp_path: Path,
) -> None:
    adapter = script(text("They asked for two blobs; the first was read."))
    with compaction_host(tmp_path, adapter, SMALL, tool_list=[blob_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            before: list[Message] = []

            async def keep(event: AgentEvent) -> None:
                if event.event.type == "compaction/start":
                    before.extend(agent.messages())

            ctx.on(EVENT, keep)
            outcome = await agent.run("two")
            after = agent.messages()
        store = ctx.get(STORE)
        types = event_types(store, agent.id)
        summary = data(store, agent.id, "compaction/summary")[0]
        replace = next(e for e in store.events(agent.id, types=("user/message",)) if e.surface_op != "append")
        projected = project(store.events(agent.id, types=PROJECTED_TYPES))
    assert outcome.kind == "completed"
    # the range: turn 1 and the prompt of turn 2; the tail: the newest call with its result
    assert [type(m).__name__ for m in before] == [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
    ]
    checkpoint = after[0]
    assert isinstance(checkpoint, UserMessage)
    assert checkpoint.source == PluginSource(plugin="compact", compaction_id=summary["compactionId"])
    assert [b.text for b in checkpoint.content if isinstance(b, TextBlock)] == [
        CHECKPOINT_PREAMBLE + "\n\n<compacted-summary>",
        "They asked for two blobs; the first was read.",
        "</compacted-summary>",
    ]
    assert after[1:3] == tuple(before[5:])
    assert isinstance(after[3], AssistantMessage)
    assert visible_text(after[3]) == "done two"
    assert len(after) == 4
    # the bracket sits before the step it made room for, and the step's request carries the checkpoint
    bracket = ["compaction/start", "compaction/summary", "user/message", "compaction/end"]
    start = types.index("compaction/start")
    assert types[start : start + 4] == bracket
    assert types[start + 4] == "step/start"
    assert summary["shadowedSeqs"] == list(replace.source_event_seqs or ())[2:]
    assert len(summary["shadowedSeqs"]) == 5
    assert summary["llmStreamCall"] is True
    assert summary["rawOutput"] == [{"type": "text", "text": "They asked for two blobs; the first was read."}]
    summariser = adapter.requests[3]
    assert summariser.call == CallKey(turn=2, step=2, attempt=1, purpose=COMPACTION_PURPOSE)
    assert summariser.tools == ()
    assert "User:\none" in visible_text(summariser.messages[0])
    assert "first first" in visible_text(summariser.messages[0])
    assert summariser.config.max_tokens == summary["maxTokens"]
    assert adapter.requests[4].messages == after[:3]
    # the projection of the stored log is the agent's view
    assert [m.view().id for m in projected.messages] == [m.id for m in after]


async def test_fork_and_resume_after_compaction_project_the_same_messages(tmp_path: Path) -> None:
    adapter = script(text("summary of turn one"))
    adapter.steps += [text("from the fork"), text("from the resumed")]
    config = msgspec.structs.replace(SMALL, calibrate=True)
    with compaction_host(tmp_path, adapter, config, tool_list=[blob_tool()]) as ctx:
        agents = ctx.get(AGENTS)
        service = ctx.get(COMPACTION)
        async with agents.create(OPTIONS) as agent:
            await agent.run("one")
            await agent.run("two")
            messages = agent.messages()
            calibration = service.calibration(agent)
        async with agents.fork(agent.id, OPTIONS) as forked:
            assert forked.messages() == messages
            assert service.calibration(forked) == calibration
            await forked.run("three")
        async with agents.resume(agent.id, OPTIONS) as resumed:
            assert resumed.messages() == messages
            assert service.calibration(resumed) == calibration
            await resumed.run("three")
    assert calibration is not None
    assert adapter.requests[-1].messages[:4] == messages
    assert adapter.requests[-2].messages[:4] == messages


async def test_a_failed_summariser_call_leaves_the_log_consistent_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    adapter = script(failure("SERVER", "summariser down"))
    adapter.steps.insert(-1, calls(("c3", "blob", BLOB % "third")))
    adapter.steps += [text("a summary at last"), text("fine")]
    with compaction_host(tmp_path, adapter, SMALL, tool_list=[blob_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            outcome = await agent.run("two")
            messages = agent.messages()
        store = ctx.get(STORE)
        types = event_types(store, agent.id)
        ends = data(store, agent.id, "compaction/end")
        projected = project(store.events(agent.id, types=PROJECTED_TYPES))
        async with ctx.get(AGENTS).resume(agent.id, OPTIONS) as resumed:
            assert resumed.messages() == messages
            third = await resumed.run("three")
    assert outcome.kind == "completed"
    assert third.kind == "completed"
    # one bracket, closed with the failure; nothing replaced; no second attempt in the same turn
    assert types.count("compaction/start") == 1
    assert "compaction/summary" not in types
    assert ends[0]["failure"] == {"message": "summariser down", "code": "SERVER"}
    assert ends[0]["llmStreamCall"] is True
    assert "rawOutput" not in ends[0]
    assert projected.replacements == 0
    assert len(messages) == 10
    purposes = [r.call.purpose for r in adapter.requests if r.call]
    assert purposes.count(COMPACTION_PURPOSE) == 2  # the failed one in turn 2, a new try in turn 3


async def test_an_empty_summary_is_a_failure_that_keeps_the_raw_output(tmp_path: Path) -> None:
    adapter = script(text("   "))
    with compaction_host(tmp_path, adapter, SMALL, tool_list=[blob_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            outcome = await agent.run("two")
        ends = data(ctx.get(STORE), agent.id, "compaction/end")
    assert outcome.kind == "completed"
    assert ends[0]["failure"]["code"] == EMPTY_SUMMARY
    assert ends[0]["rawOutput"] == [{"type": "text", "text": "   "}]
    usage = ends[0]["usage"]
    assert usage["inputTokens"] + usage["cacheReadTokens"] == estimate(adapter.requests[3])


async def test_cancelling_the_summariser_closes_the_bracket_and_aborts_the_turn(tmp_path: Path) -> None:
    calling = anyio.Event()

    async def hang(request: LlmRequest) -> AsyncIterator[StreamChunk]:
        calling.set()
        await anyio.sleep_forever()
        yield text("never")[0]

    adapter = script(hang)
    with compaction_host(tmp_path, adapter, SMALL, tool_list=[blob_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            async with anyio.create_task_group() as group:

                async def run() -> None:
                    await agent.run("two")

                group.start_soon(run)
                await calling.wait()
                group.cancel_scope.cancel()
        store = ctx.get(STORE)
        types = event_types(store, agent.id)
        ends = data(store, agent.id, "compaction/end")
        turn_ends = data(store, agent.id, "turn/end")
    assert types[-2:] == ["compaction/end", "turn/end"]
    assert ends[0]["failure"]["code"] == "ABORTED"
    assert "llmStreamCall" not in ends[0]
    assert turn_ends[-1]["reason"]["kind"] == "aborted"
