"""Cancelling a turn: mid-stream (visible text is kept as an interrupted message) and mid-tool (running calls are
logged ABORTED); the turn ends `aborted` and the agent takes the next turn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from dsh.runtime.agent import AGENTS, EVENT, AgentEvent
from dsh.runtime.llm import BlockStart, LlmRequest, StreamChunk, TextDelta
from dsh.runtime.session import STORE

from .harness import OPTIONS, ScriptedAdapter, calls, event_types, host, slow_tool, text

pytestmark = pytest.mark.anyio


def stalls_after(*chunks: StreamChunk) -> object:
    async def stream(request: LlmRequest) -> AsyncIterator[StreamChunk]:
        for chunk in chunks:
            yield chunk
        await anyio.sleep_forever()

    return stream


@pytest.mark.parametrize(("partial", "kept"), [("half an ans", True), ("   ", False)])
async def test_cancel_mid_stream_keeps_visible_text_only(tmp_path: Path, partial: str, kept: bool) -> None:
    stream = stalls_after(BlockStart(index=0, block_type="text"), TextDelta(index=0, text=partial))
    adapter = ScriptedAdapter([stream, text("next")])  # type: ignore[list-item]
    with host(tmp_path, adapter) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent, anyio.create_task_group() as group:
            streamed = anyio.Event()

            async def on_event(event: AgentEvent) -> None:
                if '"text-delta"' in event.event.data:
                    streamed.set()

            ctx.on(EVENT, on_event)

            async def run() -> None:
                await agent.run("go")

            group.start_soon(run)
            await streamed.wait()
            group.cancel_scope.cancel()
        async with ctx.get(AGENTS).resume(agent.id, OPTIONS) as again:
            outcome = await again.run("and now?")
            messages = again.messages()
        store = ctx.get(STORE)
        types = event_types(store, agent.id)
        ends = [e.data for e in store.events(agent.id, types=("turn/end",))]
        interrupted = [
            e.data for e in store.events(agent.id, types=("assistant/message",)) if "interrupted" in e.data
        ]
    first_turn = types[: types.index("turn/end") + 1]
    assert first_turn[-2:] == ["step/end", "turn/end"]
    assert ends[0] == '{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"user"}}}'
    assert bool(interrupted) is kept
    if kept:
        assert partial in interrupted[0]
    assert outcome.kind == "completed"
    assert outcome.turn == 2
    # the interrupted text is history the model sees next turn
    assert len(messages) == (4 if kept else 3)


async def test_cancel_mid_tool_logs_aborted_results(tmp_path: Path) -> None:
    started = anyio.Event()
    adapter = ScriptedAdapter([calls(("w", "wait", "{}")), text("after")])
    with host(tmp_path, adapter, tool_list=[slow_tool(started)]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            async with anyio.create_task_group() as group:

                async def run() -> None:
                    await agent.run("wait")

                group.start_soon(run)
                await started.wait()
                group.cancel_scope.cancel()
            outcome = await agent.run("next")
        store = ctx.get(STORE)
        results = [e.data for e in store.events(agent.id, types=("tool/result",))]
        types = event_types(store, agent.id)
    assert len(results) == 1
    assert '"code":"ABORTED"' in results[0]
    assert types[types.index("tool/result") + 1 :][:2] == ["step/end", "turn/end"]
    assert outcome.kind == "completed"
