"""The agent loop against a scripted adapter: a text turn, tool round trips, failures, retries and the event order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.runtime.agent import (
    AGENTS,
    ERROR,
    PRE_STEP,
    REQUEST_ERROR,
    AgentError,
    ErrorDecision,
    Fail,
    PreStep,
    RequestFailure,
    Retry,
    StepGate,
)
from dsh.runtime.kernel import Next
from dsh.runtime.llm import (
    AssistantMessage,
    BlockEnd,
    BlockStart,
    CallId,
    Finish,
    FinishMaxTokens,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallDelta,
    ToolResultBlock,
    UserMessage,
)
from dsh.runtime.session import STORE, AssistantMessageEvent
from dsh.runtime.tools import Tool, ToolContext

from .harness import (
    MODEL,
    OPTIONS,
    PROVIDER,
    ScriptedAdapter,
    calls,
    echo_tool,
    event_types,
    failure,
    host,
    text,
)

pytestmark = pytest.mark.anyio


async def test_a_text_turn_logs_the_spec_event_order(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("PONG", reasoning="say it")])
    with host(tmp_path, adapter, persona="You are terse.") as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("Reply PONG")
        store = ctx.get(STORE)
        types = event_types(store, agent.id)
    assert outcome.kind == "completed"
    assert outcome.text == "PONG"
    chunks = ["assistant/chunk"] * 9
    assert types == [
        "agent/inbox/spliced",  # the prompt queued
        "turn/start",
        "agent/inbox/spliced",  # and claimed by the turn it starts
        "step/start",
        "user/message",
        "request/header",
        "request/context",
        *chunks,
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    request = adapter.requests[0]
    assert request.provider == PROVIDER
    assert request.model == MODEL
    assert "You are terse." in request.system
    assert request.call is not None
    assert (request.call.turn, request.call.step, request.call.attempt) == (1, 1, 1)
    assert [type(m) for m in request.messages] == [UserMessage]


async def test_a_tool_round_trip_feeds_the_result_back(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([calls(("c1", "echo", '{"text": "hi"}')), text("done")])
    with host(tmp_path, adapter, tool_list=[echo_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("echo hi")
            messages = agent.messages()
        types = event_types(ctx.get(STORE), agent.id)
    assert outcome.kind == "completed"
    assert [t for t in types if not t.startswith("assistant/chunk")] == [
        "agent/inbox/spliced",
        "turn/start",
        "agent/inbox/spliced",
        "step/start",
        "user/message",
        "request/header",
        "request/context",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    result = messages[2]
    assert isinstance(result, UserMessage)
    block = result.content[0]
    assert isinstance(block, ToolResultBlock)
    assert block.content == (TextBlock("echo: hi"),)
    assert not block.is_error
    second = adapter.requests[1]
    assert second.call is not None
    assert (second.call.turn, second.call.step) == (1, 2)
    assert [type(m) for m in second.messages] == [UserMessage, AssistantMessage, UserMessage]
    assert [t.name for t in adapter.requests[0].tools] == ["echo"]


async def test_parallel_calls_log_all_calls_then_all_results(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(
        [calls(("a", "echo", '{"text": "1"}'), ("b", "echo", '{"text": "2"}')), text("both")]
    )
    with host(tmp_path, adapter, tool_list=[echo_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("twice")
        types = [t for t in event_types(ctx.get(STORE), agent.id) if t.startswith("tool/")]
    assert types == ["tool/call", "tool/call", "tool/result", "tool/result"]


@pytest.mark.parametrize(
    ("call", "code"),
    [(("x", "nope", "{}"), "UNKNOWN_TOOL"), (("x", "echo", '{"text": 3}'), "INVALID_ARGUMENTS")],
)
async def test_a_bad_call_is_an_error_result_and_the_turn_goes_on(
    tmp_path: Path, call: tuple[str, str, str], code: str
) -> None:
    adapter = ScriptedAdapter([calls(call), text("sorry")])
    with host(tmp_path, adapter, tool_list=[echo_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("go")
        results = list(ctx.get(STORE).events(agent.id, types=("tool/result",)))
    assert outcome.kind == "completed"
    assert f'"code":"{code}"' in results[0].data
    assert '"isError":true' in results[0].data


async def test_a_provider_failure_ends_the_turn_in_error_and_the_next_turn_works(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([failure("AUTH", "bad key"), text("ok")])
    errors: list[AgentError] = []
    with host(tmp_path, adapter) as ctx:

        async def on_error(error: AgentError) -> None:
            errors.append(error)

        ctx.on(ERROR, on_error)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            first = await agent.run("one")
            second = await agent.run("two")
        ends = [e.data for e in ctx.get(STORE).events(agent.id, types=("turn/end",))]
    assert first.kind == "error"
    assert first.failure is not None
    assert first.failure.code == "AUTH"
    assert second.kind == "completed"
    assert second.turn == 2
    assert '"reason":{"kind":"error","error":{"message":"bad key","code":"AUTH"}}' in ends[0]
    assert len(errors) == 1
    assert errors[0].turn == 1


async def test_a_retry_is_a_new_attempt_in_the_same_step(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([failure("SERVER"), text("recovered")])
    with host(tmp_path, adapter) as ctx:

        async def retry_once(decision: ErrorDecision, failed: RequestFailure, next_: object) -> ErrorDecision:
            return Retry() if failed.attempt == 1 else Fail()

        ctx.on(REQUEST_ERROR, retry_once)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("go")
        types = event_types(ctx.get(STORE), agent.id)
    assert outcome.kind == "completed"
    keys = [(r.call.turn, r.call.step, r.call.attempt) for r in adapter.requests if r.call]
    assert keys == [(1, 1, 1), (1, 1, 2)]
    assert types.count("step/start") == 1
    assert types.count("assistant/message") == 1


async def test_max_tokens_drops_tool_calls_and_ends_the_turn_max_tokens(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([calls(("a", "echo", '{"text": "1"}'), max_tokens=True)])
    with host(tmp_path, adapter, tool_list=[echo_tool()]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            outcome = await agent.run("go")
        types = event_types(ctx.get(STORE), agent.id)
    assert outcome.kind == "max-tokens"
    assert "tool/call" not in types


async def test_the_output_limit_inside_a_streaming_tool_call_discards_the_call_and_keeps_the_text(
    tmp_path: Path,
) -> None:
    ran: list[str] = []

    async def execute(arguments: dict[str, Any], context: ToolContext) -> str:
        ran.append(str(arguments))
        return "ran"

    tool = Tool(name="echo", description="Echo.", parameters={"type": "object"}, execute=execute)

    cut: list[StreamChunk] = [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="Starting the write now."),
        BlockEnd(index=0, block=TextBlock("Starting the write now.")),
        BlockStart(index=1, block_type="tool-call"),
        ToolCallDelta(index=1, id=CallId("cut"), name="echo", arguments_delta='{"text": "hal'),
        Finish(
            reason=FinishMaxTokens(), replay_state={"response": {"v": 2}, "blocks": [{"type": "text"}, {}]}
        ),
    ]
    adapter = ScriptedAdapter([cut, text("summary")])
    with host(tmp_path, adapter, tool_list=[tool]) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            first = await agent.run("go")
            second = await agent.run("continue")
            history = agent.messages()
        store = ctx.get(STORE)
        types = event_types(store, agent.id)
        [message] = [e.view() for e in store.events(agent.id, types=("assistant/message",))][:1]
    assert (first.kind, first.text, second.kind) == ("max-tokens", "Starting the write now.", "completed")
    assert ran == []
    assert "tool/call" not in types
    assert "tool/result" not in types
    assert isinstance(message, AssistantMessageEvent)
    assert message.data.message.content == (TextBlock("Starting the write now."),)
    assert message.data.message.source.replay_state == {"response": {"v": 2}, "blocks": [{"type": "text"}]}
    assert [type(m).__name__ for m in history] == ["UserMessage", "AssistantMessage"] * 2


async def test_a_cwd_persona_without_cwd_fails_the_turn_before_any_model_call(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("fine")])
    with host(tmp_path, adapter, persona="Work in {{cwd}}.") as ctx:
        agents = ctx.get(AGENTS)
        async with agents.create(OPTIONS.__class__(provider=PROVIDER, model=MODEL)) as agent:
            first = await agent.run("go")
        assert first.kind == "error"
        assert first.failure is not None
        assert '"{{cwd}}"' in first.failure.message
        assert adapter.requests == []
        types = event_types(ctx.get(STORE), agent.id)
        # the prompt was queued and claimed; the turn failed before its first step
        assert types == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "turn/end"]
        async with agents.resume(agent.id, OPTIONS) as resumed:
            second = await resumed.run("again")
    assert second.kind == "completed"
    assert len(adapter.requests) == 1
    assert "Work in /work/project." in adapter.requests[0].system


async def test_the_runtime_context_snapshot_follows_the_prompt_and_is_logged_only_when_it_changes(
    tmp_path: Path,
) -> None:
    from dsh.runtime.prompt import SYSTEM_PROMPT, PromptContext

    adapter = ScriptedAdapter([text("a"), text("b"), text("c")])
    clock = {"now": "noon"}
    with host(tmp_path, adapter) as ctx:
        ctx.get(SYSTEM_PROMPT).context(PromptContext("clock", 10, lambda context: f"it is {clock['now']}"))
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("one")
            await agent.run("two")
            clock["now"] = "dusk"
            await agent.run("three")
        store = ctx.get(STORE)
        types = event_types(store, agent.id)
        users = [e.data for e in store.events(agent.id, types=("user/message",))]
    first = types[: types.index("request/context") + 1]
    assert first == [
        "agent/inbox/spliced",
        "turn/start",
        "agent/inbox/spliced",
        "step/start",
        "user/message",
        "user/message",
        "request/header",
        "request/context",
    ]
    snapshots = [u for u in users if '"form":"snapshot"' in u]
    assert len(snapshots) == 2
    assert "it is noon" in snapshots[0]
    assert "it is dusk" in snapshots[1]
    assert len(users) == 5


async def test_a_fork_inherits_completed_turns_only_and_numbers_on(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("first"), text("child answer")])
    with host(tmp_path, adapter) as ctx:
        agents = ctx.get(AGENTS)
        store = ctx.get(STORE)
        async with agents.create(OPTIONS) as parent:
            await parent.run("remember 42")
            # the parent opens a second turn that is still in flight when the fork happens
            from dsh.runtime.session import TurnStart, TurnStartData

            await parent.append(TurnStart(data=TurnStartData(turn=2)))
            await parent.log.flush()
            async with agents.fork(parent.id, OPTIONS) as child:
                assert [m.content for m in child.messages()] == [m.content for m in parent.messages()]
                outcome = await child.run("what did I say?")
            info = store.info(child.id)
        parent_types = event_types(store, parent.id)
    assert outcome.turn == 2
    assert info.parent_id == parent.id
    assert info.seed_length == parent_types.index("turn/end") + 1
    child_request = adapter.requests[1]
    assert len(child_request.messages) == 3  # the parent's completed turn, then the child's own prompt


async def test_pre_step_sees_the_system_prompt_and_tools_the_request_carries(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("ok")])
    seen: list[PreStep] = []
    with host(tmp_path, adapter, persona="Be brief.", tool_list=[echo_tool()]) as ctx:

        async def listener(gate: StepGate, pre: PreStep, next_: Next[StepGate]) -> StepGate:
            seen.append(pre)
            return await next_(gate)

        ctx.on(PRE_STEP, listener)
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            await agent.run("go")
    request = adapter.requests[0]
    assert len(seen) == 1
    assert (seen[0].turn, seen[0].step, seen[0].messages) == (1, 1, ())
    assert seen[0].system == request.system
    assert seen[0].tools == request.tools
