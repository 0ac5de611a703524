"""The ACP server's pure mappings: session events to updates (live and replayed), turn outcomes to stop reasons or
JSON-RPC errors, and tool titles and kinds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    SessionInfoUpdate,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from dsh.plugins.acp import SessionUpdates, stop_reason, tool_kind, tool_title
from dsh.runtime.agent import OutcomeKind, TurnOutcome
from dsh.runtime.llm import LlmFailure
from dsh.runtime.session import StoredEvent


def event(kind: str, data: dict[str, Any], seq: int = 0) -> StoredEvent:
    return StoredEvent(type=kind, seq=seq, time=0, data=json.dumps(data))


def message(role: str, *blocks: dict[str, Any], source: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": "m", "role": role, "content": list(blocks)}
    if source is not None:
        out["source"] = source
    return out


CHUNK_TEXT = event(
    "assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "hi"}}
)
CHUNK_THINK = event(
    "assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "reasoning-delta", "index": 0, "text": "hm"}}
)
CHUNK_START = event(
    "assistant/chunk",
    {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}},
)
USER = event("user/message", message("user", {"type": "text", "text": "do it"}, source={"kind": "user"}))
SNAPSHOT = event(
    "user/message",
    message(
        "user", {"type": "text", "text": "<context/>"}, source={"kind": "plugin", "plugin": "system-prompt"}
    ),
)
ASSISTANT = event(
    "assistant/message",
    {
        "turn": 1,
        "step": 1,
        "message": message(
            "assistant",
            {"type": "reasoning", "text": "hm"},
            {"type": "text", "text": "done"},
            {"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"},
            source={"kind": "model", "provider": "p", "model": "m"},
        ),
    },
)
CALL = event(
    "tool/call",
    {
        "turn": 1,
        "step": 1,
        "callId": "c1",
        "name": "read",
        "arguments": json.dumps({"file_path": "src/a.py"}),
    },
)
RESULT = event(
    "tool/result",
    {
        "turn": 1,
        "step": 1,
        "message": message(
            "user",
            {
                "type": "tool-result",
                "toolCallId": "c1",
                "content": [{"type": "text", "text": "1: x"}],
                "isError": True,
            },
        ),
        "error": {"name": "NotFoundError", "code": "NOT_FOUND"},
    },
)
TODOS = event(
    "todo/write",
    {
        "todos": [
            {"content": "read the code", "status": "in_progress"},
            {"content": "write the fix", "status": "pending"},
            {"content": "ship", "status": "completed"},
            {"content": "dropped", "status": "cancelled"},
        ]
    },
)
TITLE = event("session/title", {"title": "Fixing a bug"})
ORDER = [CHUNK_THINK, CHUNK_TEXT, CHUNK_START, USER, SNAPSHOT, ASSISTANT, CALL, RESULT, TODOS, TITLE]


def mapped(mode: str) -> list[Any]:
    updates = SessionUpdates("live" if mode == "live" else "history", Path("/work"))
    return [update for e in ORDER for update in updates.updates(e)]


def test_live_streams_chunks_and_skips_what_the_client_already_has() -> None:
    updates = mapped("live")
    assert [type(u) for u in updates] == [
        AgentThoughtChunk,
        AgentMessageChunk,
        ToolCallStart,
        ToolCallProgress,
        AgentPlanUpdate,
        SessionInfoUpdate,
    ]


def test_history_rebuilds_the_conversation_from_messages() -> None:
    updates = mapped("history")
    assert [type(u) for u in updates] == [
        UserMessageChunk,
        AgentThoughtChunk,
        AgentMessageChunk,
        ToolCallStart,
        ToolCallProgress,
        AgentPlanUpdate,
        SessionInfoUpdate,
    ]
    assert updates[0].content.text == "do it", "the runtime-context snapshot is not the user's words"


def test_a_tool_call_and_its_failed_result() -> None:
    start, progress = SessionUpdates("live", Path("/work")).updates(CALL) + SessionUpdates("live").updates(
        RESULT
    )
    assert isinstance(start, ToolCallStart)
    assert isinstance(progress, ToolCallProgress)
    assert (start.title, start.kind, start.status) == ("read: src/a.py", "read", "in_progress")
    assert start.locations is not None
    assert start.locations[0].path == "/work/src/a.py"
    assert start.raw_input == {"file_path": "src/a.py"}
    assert (progress.tool_call_id, progress.status) == ("c1", "failed")
    assert progress.model_dump(mode="json", exclude_none=True)["content"] == [
        {"type": "content", "content": {"type": "text", "text": "1: x"}}
    ]


def test_todos_become_the_plan() -> None:
    (plan,) = SessionUpdates("live").updates(TODOS)
    assert isinstance(plan, AgentPlanUpdate)
    assert [(e.content, e.status) for e in plan.entries] == [
        ("read the code", "in_progress"),
        ("write the fix", "pending"),
        ("ship", "completed"),
        ("dropped", "pending"),
    ]


def test_a_tool_call_whose_arguments_nest_past_the_stack_still_starts() -> None:
    deep = event(
        "tool/call", {"turn": 1, "step": 1, "callId": "c2", "name": "bash", "arguments": "[" * 100_000}
    )
    (start,) = SessionUpdates("live").updates(deep)
    assert isinstance(start, ToolCallStart)
    assert (start.title, start.raw_input) == ("bash", None)


@pytest.mark.parametrize(
    ("name", "arguments", "title", "kind"),
    [
        ("bash", {"command": "ls  -la\n| head", "description": "list"}, "bash: ls -la | head", "execute"),
        ("write", {"file_path": "a.txt", "content": "x"}, "write: a.txt", "edit"),
        ("grep", {"pattern": "TODO"}, "grep: TODO", "search"),
        ("web_search", {"queries": ["a", "b"]}, "web_search: a, b", "fetch"),
        ("web_fetch", {}, "web_fetch", "fetch"),
        ("subagent", {"prompt": "go"}, "subagent", "other"),
        ("bash", {"command": "x" * 200}, "bash: " + "x" * 79 + "…", "execute"),
    ],
)
def test_tool_titles_and_kinds(name: str, arguments: dict[str, Any], title: str, kind: str) -> None:
    assert tool_title(name, arguments) == title
    assert tool_kind(name) == kind


@pytest.mark.parametrize(
    ("kind", "code", "reason"),
    [
        ("completed", None, "end_turn"),
        ("max-tokens", None, "max_tokens"),
        ("blocked", None, "refusal"),
        ("aborted", None, "cancelled"),
        ("error", "MAX_STEPS", "max_turn_requests"),
    ],
)
def test_stop_reasons(kind: OutcomeKind, code: str | None, reason: str) -> None:
    failure = LlmFailure(message="m", code=code) if code else None
    assert stop_reason(TurnOutcome(turn=3, kind=kind, failure=failure), "s") == reason


def test_a_failed_turn_is_an_internal_error_naming_the_failure() -> None:
    outcome = TurnOutcome(turn=2, kind="error", failure=LlmFailure(message="rate limited", code="RATE_LIMIT"))
    with pytest.raises(RequestError) as raised:
        stop_reason(outcome, "s1")
    assert raised.value.code == -32603
    assert str(raised.value) == "Internal error: turn failed: rate limited"
    assert raised.value.data == {"code": "RATE_LIMIT", "sessionId": "s1", "turn": 2}
