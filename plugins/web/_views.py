"""What a page shows of a session: each event of its log turned into one item for the templates (a turn, a step with
its usage, a user or assistant message, a tool call with its result, a todo list, a job, a compaction, a turn's end),
and the rows of the session list. Text is rendered as Markdown with raw HTML off, so nothing a model, a tool or a user
wrote becomes markup."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup

from dsh.runtime.llm import ReasoningBlock, TextBlock, ToolCallBlock, UsageChunk, UserSource, source_kind
from dsh.runtime.session import (
    ApprovalAsked,
    ApprovalDecided,
    ApprovalPolicy,
    AssistantChunk,
    AssistantMessageEvent,
    CommandDone,
    CommandRun,
    CompactionSummary,
    HookInvoked,
    HookResult,
    JobSettled,
    JobStarted,
    PermissionPreset,
    SandboxMode,
    SessionInfo,
    SessionStoreProtocol,
    SessionTitle,
    StepStart,
    StoredEvent,
    TodoWrite,
    ToolResultEvent,
    TurnEnd,
    TurnStart,
    UserMessageEvent,
)

__all__ = ["Item", "SessionRow", "items", "live_from", "markdown", "session_row", "when"]

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
LONG = 2_000
"""Characters of tool output shown before the rest is folded away."""


def markdown(text: str) -> Markup:
    """`text` as HTML: Markdown, with raw HTML shown as text and unsafe link schemes dropped (markdown-it's rules)."""
    return Markup(_MD.render(text))  # markdown-it escapes every raw HTML tag (html: False)


def when(ms: int) -> str:
    """A log time (ms since the epoch) as people read it, in UTC."""
    if ms <= 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:  # a model's arguments that are not JSON are shown as written
        return arguments


@dataclass
class Item:
    """One thing a session page shows, at the log position `seq`: `kind` names its template block."""

    kind: str
    seq: int
    turn: int | None = None
    step: int | None = None
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def anchor(self) -> str:
        return f"e{self.seq}"


def _text(blocks: Iterable[object]) -> str:
    return "\n\n".join(block.text for block in blocks if isinstance(block, TextBlock))


def item(event: StoredEvent) -> Item | None:
    """The item `event` shows as, or None for an event a page leaves out (a stream's text chunks, request headers)."""
    view = event.view()
    seq = event.seq
    if isinstance(view, TurnStart):
        return Item("turn", seq, view.data.turn)
    if isinstance(view, StepStart):
        return Item("step", seq, view.data.turn, view.data.step)
    if isinstance(view, AssistantChunk):
        chunk = view.data.chunk
        if isinstance(chunk, UsageChunk):
            usage = chunk.usage
            return Item(
                "usage",
                seq,
                view.data.turn,
                view.data.step,
                {
                    "input": usage.input_tokens,
                    "output": usage.output_tokens,
                    "cached": usage.cache_read_tokens,
                },
            )
        return None
    if isinstance(view, UserMessageEvent):
        message = view.data
        source = source_kind(message.source)
        return Item("user", seq, fields={"source": source, "text": markdown(_text(message.content))})
    if isinstance(view, AssistantMessageEvent):
        data = view.data
        blocks = data.message.content
        return Item(
            "assistant",
            seq,
            data.turn,
            data.step,
            {
                "reasoning": [b.text for b in blocks if isinstance(b, ReasoningBlock)],
                "text": markdown(_text(blocks)),
                "calls": [
                    {"id": b.id, "name": b.name, "arguments": _pretty(b.arguments)}
                    for b in blocks
                    if isinstance(b, ToolCallBlock)
                ],
                "interrupted": bool(data.interrupted),
            },
        )
    if isinstance(view, ToolResultEvent):
        result = view.data
        text = "\n".join(
            inner.text
            for block in result.message.content
            for inner in (getattr(block, "content", None) or (block,))
            if isinstance(inner, TextBlock)
        )
        error = result.error.code if result.error is not None else None
        return Item(
            "result", seq, result.turn, result.step, {"text": text, "long": len(text) > LONG, "error": error}
        )
    if isinstance(view, TurnEnd):
        reason = view.data.reason
        detail = reason.error.message if reason.error is not None else (reason.message or "")
        code = reason.error.code if reason.error is not None else ""
        return Item("end", seq, view.data.turn, fields={"kind": reason.kind, "code": code, "detail": detail})
    if isinstance(view, TodoWrite):
        return Item("todos", seq, fields={"todos": [(t.status, t.content) for t in view.data.todos]})
    if isinstance(view, CompactionSummary):
        return Item("compaction", seq, fields={"text": markdown(_text(view.data.summary or ()))})
    if isinstance(view, JobStarted | JobSettled):
        return Item("job", seq, fields={"type": event.type, "data": event.data})
    if isinstance(view, SessionTitle):
        return Item("title", seq, fields={"title": view.data.title})
    return _person_in_the_loop(view, seq)


def _person_in_the_loop(view: object, seq: int) -> Item | None:
    """Approvals, hooks, presets, modes and slash commands, one line each."""
    if isinstance(view, ApprovalAsked):
        asked = view.data
        return Item(
            "approval", seq, fields={"tool": asked.tool_name, "call": asked.call_id, "reason": asked.reason}
        )
    if isinstance(view, ApprovalDecided):
        return Item("decided", seq, fields={"outcome": view.data.outcome, "message": view.data.message})
    if isinstance(view, HookInvoked):
        invoked = view.data
        line = f"hook {invoked.point} ({invoked.dialect}) {invoked.handler_id}" + (
            f" for {invoked.matcher}" if invoked.matcher else ""
        )
        return Item("hook", seq, fields={"line": line})
    if isinstance(view, HookResult):
        result = view.data
        line = f"hook {result.point} {result.handler_id}: {result.decision}" + (
            f" (exit {result.exit_code})" if result.exit_code is not None else ""
        )
        return Item("hook", seq, fields={"line": line, "detail": result.stderr_summary})
    if isinstance(view, PermissionPreset):
        return Item("setting", seq, fields={"line": f"permission preset: {view.data.preset}"})
    if isinstance(view, SandboxMode):
        return Item("setting", seq, fields={"line": f"sandbox mode: {view.data.mode}"})
    if isinstance(view, ApprovalPolicy):
        return Item("setting", seq, fields={"line": f"approval policy: {view.data.policy}"})
    if isinstance(view, CommandRun):
        return Item("setting", seq, fields={"line": f"/{view.data.name}{view.data.args}"})
    if isinstance(view, CommandDone) and view.data.text:
        return Item("setting", seq, fields={"line": view.data.text})
    return None


def live_from(events: Sequence[StoredEvent], length: int) -> int:
    """Where a page's live view starts: `length`, or the first chunk of a step still streaming (its text is in the
    log as deltas only, which the page does not render), so a page opened mid-step still shows what streamed. Read
    backwards from the end to the last `turn/end` (no step of an ended turn streams on)."""
    first = length
    finished: set[tuple[int, int]] = set()
    for event in reversed(events):
        view = event.view()
        if isinstance(view, TurnEnd):
            break
        if isinstance(view, AssistantMessageEvent):
            finished.add((view.data.turn, view.data.step))
        elif isinstance(view, AssistantChunk) and (view.data.turn, view.data.step) not in finished:
            first = event.seq
    return first


def items(events: Iterable[StoredEvent]) -> Iterator[Item]:
    """The items of `events`, in log order."""
    for event in events:
        shown = item(event)
        if shown is not None:
            yield shown


@dataclass(frozen=True)
class SessionRow:
    """One line of the session list."""

    info: SessionInfo
    title: str
    created: str
    turns: int
    tokens: int
    ended: str
    depth: int


_SUMMARY_TYPES = (TurnEnd.TAG, SessionTitle.TAG, AssistantMessageEvent.TAG)


def session_row(store: SessionStoreProtocol, info: SessionInfo, depth: int = 0) -> SessionRow:
    """`info` with what the list shows of its log: its title (or first prompt), turns, tokens and last ending."""
    title = ""
    turns = tokens = 0
    ended = "-"
    for event in store.events(info.id, types=_SUMMARY_TYPES):
        view = event.view()
        if isinstance(view, TurnEnd):
            turns += 1
            ended = view.data.reason.kind
        elif isinstance(view, SessionTitle):
            title = view.data.title
        elif isinstance(view, AssistantMessageEvent) and view.data.usage is not None:
            tokens += view.data.usage.input_tokens + view.data.usage.output_tokens
    if not title:
        for event in store.events(info.id, types=(UserMessageEvent,)):
            view = event.view()
            if isinstance(view, UserMessageEvent) and isinstance(view.data.source, UserSource):
                title = _text(view.data.content)[:120]
                break
    return SessionRow(info, title or "(no prompt)", when(info.created_at), turns, tokens, ended, depth)
