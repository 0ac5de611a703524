"""What a replayed (or recorded) session did, read back from its JSONL log for hand-written tests: its events, its
tool calls with their arguments and results, and the assistant's final text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dsh.runtime.agent import AgentState
from dsh.runtime.llm import TextBlock, ToolResultBlock
from dsh.runtime.session import (
    AssistantMessageEvent,
    StoredEvent,
    ToolCall,
    ToolResultData,
    ToolResultEvent,
    read_jsonl,
)

__all__ = ["ToolCallRecord", "final_text", "log_events", "tool_calls"]


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call and its outcome: `arguments` decoded from the JSON the model wrote (the raw text when it is
    not JSON), `result` the text the model was given back, `is_error` and `code` as the tool reported them
    (`result` is None for a call that has no logged result)."""

    turn: int
    step: int
    call_id: str
    name: str
    arguments: Any
    result: str | None
    is_error: bool = False
    code: str | None = None


def log_events(log: bytes) -> list[StoredEvent]:
    """The events of one JSONL log, checked as any log read is."""
    _, events = read_jsonl(log.splitlines(keepends=True), file="(replayed log)", folds=(AgentState(),))
    return list(events)


def tool_calls(events: list[StoredEvent]) -> list[ToolCallRecord]:
    """Every tool call in log order, each with the result logged for it."""
    results: dict[str, ToolResultData] = {}
    for event in events:
        view = event.view()
        if isinstance(view, ToolResultEvent):
            for block in view.data.message.content:
                if isinstance(block, ToolResultBlock):
                    results[block.tool_call_id] = view.data
    records = []
    for event in events:
        view = event.view()
        if not isinstance(view, ToolCall):
            continue
        call = view.data
        try:
            arguments: Any = json.loads(call.arguments)
        except ValueError:
            arguments = call.arguments
        outcome = results.get(call.call_id)
        text: str | None = None
        is_error = False
        if outcome is not None:
            block = next(
                b
                for b in outcome.message.content
                if isinstance(b, ToolResultBlock) and b.tool_call_id == call.call_id
            )
            text = "".join(part.text for part in block.content if isinstance(part, TextBlock))
            is_error = block.is_error
        code = None if outcome is None or outcome.error is None else outcome.error.code
        records.append(
            ToolCallRecord(call.turn, call.step, call.call_id, call.name, arguments, text, is_error, code)
        )
    return records


def final_text(events: list[StoredEvent]) -> str | None:
    """The text of the last assistant message that has any (None: the assistant wrote none)."""
    text = None
    for event in events:
        view = event.view()
        if isinstance(view, AssistantMessageEvent):
            written = "".join(
                block.text for block in view.data.message.content if isinstance(block, TextBlock)
            )
            if written:
                text = written
    return text
