"""A long session (200 turns, each reading a large tool output) stays inside the window at every request."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from dsh.plugins.compaction import COMPACTION_PURPOSE, Config
from dsh.runtime.agent import AGENTS
from dsh.runtime.llm import LlmRequest, StreamChunk, TextBlock, ToolResultBlock, UserMessage
from dsh.runtime.session import STORE
from tests.runtime.agent.harness import OPTIONS, calls, text

from .harness import MeteredModel, blob_tool, compaction_host, estimate

pytestmark = pytest.mark.anyio

WINDOW = 16_384
TURNS = 200


def answer(request: LlmRequest) -> Sequence[StreamChunk]:
    """The summariser answers a fixed-size summary; the agent reads one blob per turn, then answers."""
    assert request.call is not None
    turn = request.call.turn
    if request.call.purpose == COMPACTION_PURPOSE:
        return text(f"Checkpoint at turn {turn}: " + "the blobs were read and reported. " * 12)
    last = request.messages[-1]
    if isinstance(last, UserMessage) and isinstance(last.content[0], ToolResultBlock):
        return text(f"Turn {turn}: the blob was read; " + "it held filler. " * 8)
    size = 2_000 + (turn * 1_373) % 8_000  # 2k to 10k characters: about 500 to 2500 tokens
    return calls((f"call-{turn}", "blob", f'{{"size": {size}, "tag": "t{turn}"}}'))


async def test_two_hundred_turns_of_large_tool_output_stay_under_the_window(tmp_path: Path) -> None:
    model = MeteredModel(answer)
    config = Config(context_window=WINDOW)
    with compaction_host(tmp_path, model, config, tool_list=[blob_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcomes = [
                await agent.run(f"Turn {i}: read the next blob. " + "Context. " * 30) for i in range(TURNS)
            ]
        types = [
            e.type for e in ctx.get(STORE).events(agent.id, types=("compaction/summary", "compaction/prune"))
        ]
    assert all(outcome.kind == "completed" for outcome in outcomes)
    sizes = [estimate(request) for request in model.requests]
    assert max(sizes) <= WINDOW, f"largest request: {max(sizes)} tokens"
    steps = [
        estimate(r) for r in model.requests if r.call is not None and r.call.purpose != COMPACTION_PURPOSE
    ]
    assert len(steps) == 2 * TURNS  # no step was retried: the window was never exceeded
    assert types.count("compaction/summary") >= 5
    summariser = [r for r in model.requests if r.call is not None and r.call.purpose == COMPACTION_PURPOSE]
    # every summary after the first folds the checkpoint before it into the new one
    transcripts = [b.text for r in summariser for b in r.messages[0].content if isinstance(b, TextBlock)]
    assert all("Earlier checkpoint:\nCheckpoint at turn " in t for t in transcripts[1:])
    assert types.count("compaction/prune") >= 5
