"""Model-visible <=> logged: every request the loop sent can be rebuilt from the log alone (messages by projection,
system, tools and call config from the last `request/header` before it)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import msgspec
import pytest
from hypothesis import given

from dsh.runtime.agent import AGENTS, REQUEST_ERROR, ErrorDecision, RequestFailure, Retry
from dsh.runtime.llm import LlmRequest, Message, StreamChunk, ToolSchema
from dsh.runtime.prompt import SYSTEM_PROMPT, PromptContext
from dsh.runtime.session import STORE, SessionStoreProtocol, StoredEvent, project
from tests.strategies import AgentStep, agent_turns

from .harness import OPTIONS, ScriptedAdapter, calls, echo_tool, failure, host, text

_MESSAGE: msgspec.json.Decoder[Message] = msgspec.json.Decoder(Message)


def script(turns: list[list[AgentStep]]) -> list[list[StreamChunk]]:
    steps: list[list[StreamChunk]] = []
    for t, turn in enumerate(turns):
        for s, (kind, count) in enumerate(turn):
            if kind == "text":
                steps.append(text(f"answer {t}.{s}"))
            elif kind == "fail":
                steps.append(failure("SERVER"))
            else:
                steps.append(calls(*((f"c{t}-{s}-{i}", "echo", f'{{"text": "{i}"}}') for i in range(count))))
    return steps


def rebuild(events: list[StoredEvent], request: LlmRequest) -> LlmRequest:
    """The request the log says was sent by the call that starts at the end of `events`."""
    projection = project(events)
    header = msgspec.json.decode(projection.header_json or "null")
    config = dict(header["config"])
    provider, model = config.pop("provider"), config.pop("model")
    return LlmRequest(
        provider=provider,
        model=model,
        messages=tuple(_MESSAGE.decode(m.json) for m in projection.messages),
        system=header.get("system", ""),
        tools=tuple(msgspec.convert(t, ToolSchema) for t in header.get("tools", ())),
        config=msgspec.convert(config, type(request.config)),
        session_id=request.session_id,
        call=request.call,
    )


def call_starts(store: SessionStoreProtocol, session_id: str) -> list[int]:
    """The seq of the first chunk of every model call, in order."""
    starts: list[int] = []
    open_call = False
    for event in store.events(session_id, types=("assistant/chunk",)):
        if not open_call:
            starts.append(event.seq)
            open_call = True
        if '"type":"finish"' in event.data:
            open_call = False
    return starts


async def run_script(tmp_path: Path, turns: list[list[AgentStep]]) -> None:
    adapter = ScriptedAdapter(script(turns))
    with host(tmp_path, adapter, persona="persona of {{model}}", tool_list=[echo_tool()]) as ctx:
        ctx.get(SYSTEM_PROMPT).context(PromptContext("clock", 10, lambda context: "it is always noon"))

        async def retry(decision: ErrorDecision, failed: RequestFailure, next_: object) -> ErrorDecision:
            return Retry()

        ctx.on(REQUEST_ERROR, retry)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            for number in range(len(turns)):
                outcome = await agent.run(f"turn {number}")
                assert outcome.kind == "completed"
        store = ctx.get(STORE)
        events = list(store.events(agent.id))
        starts = call_starts(store, agent.id)
    assert len(starts) == len(adapter.requests)
    for start, request in zip(starts, adapter.requests, strict=True):
        assert rebuild(events[:start], request) == request


@given(turns=agent_turns())
def test_every_request_is_rebuilt_from_the_log(turns: list[list[AgentStep]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        anyio.run(run_script, Path(directory), turns)


@pytest.mark.anyio
async def test_a_resumed_agent_logs_a_resume_header_then_only_changes(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("one"), text("two"), text("three")])
    with host(tmp_path, adapter) as ctx:
        agents = ctx.get(AGENTS)
        async with agents.create(OPTIONS) as agent:
            await agent.run("1")
        async with agents.resume(agent.id, OPTIONS) as resumed:
            await resumed.run("2")
            await resumed.run("3")
        headers = ctx.get(STORE).events(agent.id, types=("request/header",))
        reasons = [msgspec.json.decode(e.data)["reason"] for e in headers]
    assert reasons == ["initial", "resume"]
