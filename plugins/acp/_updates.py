"""`SessionUpdates`: what a client is shown of a session's events, as ACP `session/update` payloads. Live, a turn
streams as its chunks arrive (text and reasoning deltas), its tool calls and their results, and the plan whenever
`todo/write` is logged; replayed (`session/load`), the same conversation is rebuilt from the log's messages: the
user's prompts, the assistant's text and reasoning, the tool calls and their results, the plan and the title."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    PlanEntryStatus,
    SessionInfoUpdate,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
    UserMessageChunk,
)

from dsh.runtime.llm import (
    Message,
    ReasoningBlock,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    ToolResultBlock,
    UserSource,
)
from dsh.runtime.session import (
    AssistantChunk,
    AssistantChunkData,
    AssistantMessageData,
    AssistantMessageEvent,
    SessionTitle,
    SessionTitleData,
    StoredEvent,
    TodoWrite,
    TodoWriteData,
    ToolCall,
    ToolCallData,
    ToolResultData,
    ToolResultEvent,
    UserMessageEvent,
)

__all__ = ["SessionUpdate", "SessionUpdates", "tool_kind", "tool_title"]

SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | SessionInfoUpdate
    | AvailableCommandsUpdate
)

_KINDS: dict[str, ToolKind] = {
    "bash": "execute",
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "glob": "search",
    "grep": "search",
    "web_fetch": "fetch",
    "web_search": "fetch",
    "todo_write": "think",
}
_SUBJECT = {
    "bash": "command",
    "glob": "pattern",
    "grep": "pattern",
    "web_fetch": "url",
    "web_search": "queries",
}
_PATH_TOOLS = ("read", "write", "edit")
_TITLE_CHARS = 80
_STATUSES: dict[str, PlanEntryStatus] = {"in_progress": "in_progress", "completed": "completed"}


def tool_kind(name: str) -> ToolKind:
    """The ACP kind of one of dsh's tools (`other` for a tool dsh does not know)."""
    return _KINDS.get(name, "other")


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """`name: subject`: the command, path, pattern, URL or queries the call is about, on one short line."""
    key = "file_path" if name in _PATH_TOOLS else _SUBJECT.get(name)
    subject = arguments.get(key) if key else None
    if isinstance(subject, list):
        subject = ", ".join(str(item) for item in subject)
    if not isinstance(subject, str) or not subject.strip():
        return name
    line = " ".join(subject.split())
    if len(line) > _TITLE_CHARS:
        line = line[: _TITLE_CHARS - 1] + "…"
    return f"{name}: {line}"


def _arguments(text: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        # the model sent arguments that are not JSON (or nest past the interpreter's stack); the tool's result says
        # so, the title shows the name
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _texts(message: Message) -> list[str]:
    return [block.text for block in message.content if isinstance(block, TextBlock) and block.text]


def _result_text(result: ToolResultData) -> str:
    parts: list[str] = []
    for block in result.message.content:
        if isinstance(block, ToolResultBlock):
            parts.extend(inner.text for inner in block.content if isinstance(inner, TextBlock) and inner.text)
    return "".join(parts)


class SessionUpdates:
    """Maps one session's events to updates. `mode` is `live` (a turn as it streams) or `history` (a stored log
    replayed for `session/load`); `cwd` resolves the paths of file tools' locations."""

    def __init__(self, mode: Literal["live", "history"], cwd: Path | None = None) -> None:
        self.mode = mode
        self.cwd = cwd

    def updates(self, event: StoredEvent) -> list[SessionUpdate]:
        kind = event.type
        live = self.mode == "live"
        if kind == AssistantChunk.TAG:
            return self._chunk(event.decode_data()) if live else []
        if kind == AssistantMessageEvent.TAG:
            return [] if live else self._assistant(event.decode_data())
        if kind == UserMessageEvent.TAG:
            return [] if live else self._user(event.decode_data())
        if kind == ToolCall.TAG:
            return [self._call(event.decode_data())]
        if kind == ToolResultEvent.TAG:
            return [self._result(event.decode_data())]
        if kind == TodoWrite.TAG:
            return [self._plan(event.decode_data())]
        if kind == SessionTitle.TAG:
            title: SessionTitleData = event.decode_data()
            return [SessionInfoUpdate(session_update="session_info_update", title=title.title)]
        return []

    def _chunk(self, data: AssistantChunkData) -> list[SessionUpdate]:
        chunk = data.chunk
        if isinstance(chunk, TextDelta) and chunk.text:
            return [update_agent_message_text(chunk.text)]
        if isinstance(chunk, ReasoningDelta) and chunk.text:
            return [update_agent_thought_text(chunk.text)]
        return []

    def _assistant(self, data: AssistantMessageData) -> list[SessionUpdate]:
        out: list[SessionUpdate] = []
        for block in data.message.content:
            if isinstance(block, ReasoningBlock) and block.text:
                out.append(update_agent_thought_text(block.text))
            elif isinstance(block, TextBlock) and block.text:
                out.append(update_agent_message_text(block.text))
        return out

    def _user(self, message: Message) -> list[SessionUpdate]:
        if not isinstance(message.source, UserSource):
            return []  # the runtime-context snapshot and other plugin messages are not the user's words
        return [update_user_message_text(text) for text in _texts(message)]

    def _call(self, call: ToolCallData) -> ToolCallStart:
        arguments = _arguments(call.arguments)
        locations = None
        path = arguments.get("file_path") if call.name in _PATH_TOOLS else None
        if isinstance(path, str) and path:
            resolved = Path(path) if Path(path).is_absolute() or self.cwd is None else self.cwd / path
            locations = [ToolCallLocation(path=str(resolved))]
        return start_tool_call(
            call.call_id,
            tool_title(call.name, arguments),
            kind=tool_kind(call.name),
            status="in_progress",
            locations=locations,
            raw_input=arguments or None,
        )

    def _result(self, result: ToolResultData) -> ToolCallProgress:
        first = result.message.content[0] if result.message.content else None
        block = first if isinstance(first, ToolResultBlock) else None
        call_id = block.tool_call_id if block is not None else ""
        failed = result.error is not None or (block is not None and block.is_error)
        text = _result_text(result)
        return update_tool_call(
            call_id,
            status="failed" if failed else "completed",
            content=[tool_content(text_block(text))] if text else None,
        )

    def _plan(self, data: TodoWriteData) -> AgentPlanUpdate:
        return update_plan(
            plan_entry(todo.content, status=_STATUSES.get(todo.status, "pending")) for todo in data.todos
        )
