"""The recorded todo-write session (fixtures/harness/todo-write) run through the real agent loop: the model's
recorded chunks are served back per (turn, step), and todo_write must log the same `todo/write` and answer with the
same text as the original did, between the same `tool/call` and `tool/result`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.plugins.tool_todo import plugin as todo_plugin
from dsh.runtime.agent import AGENTS, EVENT, AgentEvent, AgentOptions
from dsh.runtime.agent import plugin as agent_plugin
from dsh.runtime.kernel import Context
from dsh.runtime.llm import LLM, LlmRequest, StreamChunk, decode_chunk
from dsh.runtime.llm import plugin as llm_plugin
from dsh.runtime.prompt import plugin as prompt_plugin
from dsh.runtime.session import STORE, CountingIds, FixedClock, SessionStore, SessionStoreProtocol
from dsh.runtime.tools import plugin as tools_plugin

from ...runtime.llm.harness import HARNESS, Call, recorded_calls

RECORDING = HARNESS / "todo-write" / "session.jsonl"


class RecordedModel:
    """Serves each call the chunks the recording holds for its (turn, step); a call it has none for fails."""

    def __init__(self, calls: list[Call]) -> None:
        self.calls = {call.key: call for call in calls}
        self.served: list[tuple[int, int]] = []

    async def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        assert request.call is not None
        key = (request.call.turn, request.call.step)
        self.served.append(key)
        for chunk in self.calls[key].chunks:
            yield decode_chunk(json.dumps(chunk))


def recorded(kind: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in RECORDING.read_text().splitlines()[1:]]
    return [event for event in events if event["type"] == kind]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStoreProtocol]:
    with SessionStore(
        tmp_path / "sessions.db", clock=FixedClock(1_000, step=1), ids=CountingIds("s"), synchronous="NORMAL"
    ) as opened:
        yield opened


@pytest.mark.anyio
async def test_the_recorded_todo_write_turn_replays(store: SessionStoreProtocol, tmp_path: Path) -> None:
    ctx = Context()
    ctx.provide(STORE, store)
    ctx.plugin(prompt_plugin)
    ctx.plugin(tools_plugin)
    ctx.plugin(llm_plugin)
    ctx.plugin(agent_plugin)
    ctx.plugin(todo_plugin, {"allow_parallel_in_progress": True})  # the recording sends two in_progress items
    model = RecordedModel(recorded_calls(RECORDING))
    ctx.get(LLM).register("deepseek-official", model)
    prompt = recorded("user/message")[0]["data"]["content"][0]["text"]
    heard: list[str] = []

    async def hear(event: AgentEvent) -> None:
        heard.append(event.event.type)

    ctx.on(EVENT, hear)

    options = AgentOptions(provider="deepseek-official", model="deepseek-v4-flash", cwd=tmp_path)
    async with ctx.get(AGENTS).create(options) as agent:
        outcome = await agent.run(prompt)
        session_id = agent.id

    assert (outcome.kind, outcome.text) == ("completed", "DONE")
    assert model.served == [(1, 1), (1, 2)]
    events = list(store.events(session_id))
    kinds = [event.type for event in events]
    at = kinds.index("tool/call")
    assert kinds[at : at + 3] == ["tool/call", "todo/write", "tool/result"]
    todo_write = json.loads(events[at + 1].data)
    assert todo_write == recorded("todo/write")[0]["data"]
    result = json.loads(events[at + 2].data)["message"]["content"][0]
    original = recorded("tool/result")[0]["data"]["message"]["content"][0]
    assert result == original
    assert "todo/write" in heard  # logged through the agent, so clients listening to agent/event see the plan
