"""Tool-result pruning: old, large tool results lose their content (nothing else) to a placeholder, logged as
`compaction/prune` and a single-node `tool/result` replacement, before any summary is considered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.plugins.compaction import Config
from dsh.runtime.agent import AGENTS
from dsh.runtime.llm import TextBlock, ToolResultBlock, UserMessage
from dsh.runtime.session import STORE, Replace
from tests.runtime.agent.harness import OPTIONS, calls, text

from .harness import MeteredScript, blob_tool, compaction_host, data

pytestmark = pytest.mark.anyio

BLOB = '{"size": 8000, "tag": "%s"}'


async def test_an_old_large_result_is_pruned_and_no_summary_is_needed(tmp_path: Path) -> None:
    adapter = MeteredScript(
        [
            calls(("c1", "blob", BLOB % "first")),
            text("done one"),
            calls(("c2", "blob", BLOB % "second")),
            text("done two"),  # no summariser call: pruning alone made room
        ]
    )
    config = Config(context_window=4096, calibrate=False)
    with compaction_host(tmp_path, adapter, config, tool_list=[blob_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            before = agent.messages()
            outcome = await agent.run("two")
            after = agent.messages()
        async with ctx.get(AGENTS).resume(agent.id, OPTIONS) as resumed:
            assert resumed.messages() == after
        store = ctx.get(STORE)
        prunes = data(store, agent.id, "compaction/prune")
        results = list(store.events(agent.id, types=("tool/result",)))
        types = [e.type for e in store.events(agent.id)]
    assert outcome.kind == "completed"
    assert "compaction/start" not in types
    original, pruned = results[0], results[2]
    assert isinstance(pruned.surface_op, Replace)
    assert (pruned.surface_op.start, pruned.surface_op.end) == (original.seq, original.seq)
    prune_seq = types.index("compaction/prune")
    assert pruned.source_event_seqs == (prune_seq, original.seq)
    assert types[prune_seq + 1] == "tool/result"
    assert prunes == [
        {
            "compactionId": prunes[0]["compactionId"],
            "turn": 2,
            "shadowedSeqs": [original.seq],
            "shadowedTokenCount": prunes[0]["shadowedTokenCount"],
        }
    ]
    assert prunes[0]["shadowedTokenCount"] > 2000
    # only the result content changed: same message id, call id, error flag, turn and step; meta is gone
    was, now = json.loads(original.data), json.loads(pruned.data)
    assert was.pop("meta") == {"size": 8000}
    was["message"]["content"][0].pop("content")
    placeholder = now["message"]["content"][0].pop("content")
    assert now == was
    assert placeholder[0]["text"].startswith("[This tool output (about 2")
    # in the projection the placeholder stands where the result stood; everything else is as it was
    assert len(after) == len(before) + 4
    assert after[:2] == before[:2]
    assert after[3:] == (*before[3:], *after[len(before) :])
    result = after[2]
    assert isinstance(result, UserMessage)
    block = result.content[0]
    assert isinstance(block, ToolResultBlock)
    assert block.content == (TextBlock(placeholder[0]["text"]),)
    assert adapter.requests[-1].messages == after[:-1]


async def test_small_results_and_the_kept_tail_are_never_pruned(tmp_path: Path) -> None:
    adapter = MeteredScript(
        [
            calls(("c1", "blob", '{"size": 3000}')),  # ~750 tokens: under prune_min_tokens
            text("done one"),
            calls(("c2", "blob", '{"size": 12000}')),  # the newest: kept verbatim
            text("the summary"),
            text("done two"),
        ]
    )
    config = Config(context_window=4096, calibrate=False)
    with compaction_host(tmp_path, adapter, config, tool_list=[blob_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            await agent.run("two")
        types = [e.type for e in ctx.get(STORE).events(agent.id)]
    assert "compaction/prune" not in types
    assert types.count("compaction/summary") == 1
