"""`/compact` (the `agent/compact` waterfall): between turns the compaction plugin summarises everything older than
the kept tail whatever the estimate, logged as any compaction (bracket, summary, checkpoint replacing the range); a
session too short to compact says so, and a deployment without compaction answers None."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.plugins.compaction import Config
from dsh.runtime.agent import AGENTS, COMPACT, CompactRequest
from dsh.runtime.llm import UserMessage
from tests.runtime.agent.harness import OPTIONS, calls, host, text

from .harness import MeteredScript, blob_tool, compaction_host

pytestmark = pytest.mark.anyio

ROOMY = Config(context_window=1_000_000, prune=False, calibrate=False)  # never compacts by itself


async def test_compact_now_summarises_between_turns_and_logs_it(tmp_path: Path) -> None:
    adapter = MeteredScript(
        [
            calls(("c1", "blob", '{"size": 8000, "tag": "first"}')),
            text("done one"),
            text("done two"),
            text("Summary: they asked for a blob and got it."),
        ]
    )
    with compaction_host(tmp_path, adapter, ROOMY, tool_list=[blob_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            await agent.run("two")
            done = await ctx.waterfall(COMPACT, None, CompactRequest(agent))
            assert done is not None
            assert done.summarised
            assert done.after < done.before
            assert done.note is None
            types = [e.type for e in agent.log.store.events(agent.id)]
            tail = types[types.index("compaction/start") :]
            assert tail == ["compaction/start", "compaction/summary", "user/message", "compaction/end"]
            first = agent.messages()[0]
            assert isinstance(first, UserMessage)
            assert "they asked for a blob" in "".join(getattr(b, "text", "") for b in first.content)


async def test_a_session_too_short_to_compact_says_so(tmp_path: Path) -> None:
    with compaction_host(tmp_path, MeteredScript([text("hi")]), ROOMY) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            done = await ctx.waterfall(COMPACT, None, CompactRequest(agent))
            assert done is not None
            assert not done.summarised
            assert done.note is not None
            assert done.note.startswith("nothing to compact")


async def test_without_the_compaction_plugin_nothing_answers(tmp_path: Path) -> None:
    with host(tmp_path, MeteredScript([text("hi")])) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            assert await ctx.waterfall(COMPACT, None, CompactRequest(agent)) is None
