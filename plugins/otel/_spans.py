"""A session's figures as OpenTelemetry spans (GenAI semantic conventions): a span for the session, one per turn
(`invoke_agent`), one per model call (`chat`, with its model, usage, finish reasons and time to first chunk) and one
per tool call (`execute_tool`, with the tool's name and call id), each at the times its log states; a subagent's
session hangs under the tool call that spawned it.

Ids are derived from the log, never drawn at random: the trace id from the root session's id and each span id from
its session and what it is (a turn number, a call's turn/step/attempt, a tool call's id). So a session exported
live and exported again from the store is the same trace, and a child exported on its own finds its parent's tool
call span. Prompts, outputs, tool arguments and results are left out unless the caller passes `Content`."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import msgspec
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from dsh.runtime.about import version
from dsh.runtime.session import (
    AssistantMessageEvent,
    CallStats,
    SessionStats,
    StoredEvent,
    ToolCall,
    ToolResultEvent,
    ToolRun,
    TurnStats,
)

__all__ = ["Content", "content_of", "quiet_exporter", "resource", "session_spans", "span_id", "trace_id"]

_MS = 1_000_000  # ns per ms
_SCOPE = InstrumentationScope("dsh", version())
_FINISH_REASONS = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


def _digest(*parts: object, size: int) -> int:
    text = "\x1f".join(str(part) for part in parts).encode()
    value = int.from_bytes(hashlib.sha256(text).digest()[:size], "big")
    return value or 1  # an all-zero id is invalid in OpenTelemetry


def trace_id(root_session: str) -> int:
    """The trace id of a session tree: from the id of its root session."""
    return _digest("dsh-trace", root_session, size=16)


def span_id(session: str, *what: object) -> int:
    """The span id of something in a session: `("session",)`, `("turn", n)`, `("call", kind, turn, step, n)`,
    `("tool", call_id)`."""
    return _digest("dsh-span", session, *what, size=8)


_EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.http"


@contextmanager
def quiet_exporter() -> Iterator[None]:
    """Silence the OTLP exporter's own log lines (a warning per retry, an error per failed batch) for the block:
    dsh says once, in its own words, that spans could not be sent. The logger's level is restored after."""
    logger = logging.getLogger(_EXPORTER_LOGGER)
    before = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(before)


def resource() -> Resource:
    """`service.name` dsh (the environment's `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` win)."""
    return Resource.create({"service.name": "dsh", "service.version": version()})


@dataclass
class Content:
    """What a model said and what tools took and gave, by call (only exported when the deployment opts in): each
    step's last complete assistant message, and each tool call's arguments and result text."""

    outputs: dict[tuple[int, int], str] = field(default_factory=dict)
    arguments: dict[str, str] = field(default_factory=dict)
    results: dict[str, str] = field(default_factory=dict)


def content_of(events: Iterable[StoredEvent]) -> Content:
    """The `Content` of a log (its assistant messages, tool calls and tool results; other events are skipped)."""
    content = Content()
    for event in events:
        if event.type not in (AssistantMessageEvent.TAG, ToolCall.TAG, ToolResultEvent.TAG):
            continue
        view = event.view()
        if isinstance(view, AssistantMessageEvent):
            message = msgspec.json.encode(view.data.message.content).decode()
            content.outputs[(view.data.turn, view.data.step)] = message
        elif isinstance(view, ToolCall):
            content.arguments[view.data.call_id] = view.data.arguments
        elif isinstance(view, ToolResultEvent):
            source = view.data.message.source
            call_id = getattr(source, "call_id", None)
            if call_id is not None:
                content.results[call_id] = msgspec.json.encode(view.data.message.content).decode()
    return content


class _Builder:
    """The spans of one session tree, all in one trace."""

    def __init__(self, trace: int, res: Resource, content: dict[str, Content] | None) -> None:
        self.trace = trace
        self.resource = res
        self.content = content
        self.spans: list[ReadableSpan] = []

    def _context(self, span: int) -> SpanContext:
        return SpanContext(self.trace, span, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))

    def add(
        self,
        name: str,
        span: int,
        parent: int | None,
        start: int | None,
        end: int | None,
        attributes: dict[str, Any],
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        error: str | None = None,
    ) -> None:
        begin = start if start is not None else 0
        finish = end if end is not None and end >= begin else begin
        status = Status(StatusCode.ERROR, error) if error else Status(StatusCode.UNSET)
        self.spans.append(
            ReadableSpan(
                name=name,
                context=self._context(span),
                parent=None if parent is None else self._context(parent),
                resource=self.resource,
                attributes={key: value for key, value in attributes.items() if value is not None},
                kind=kind,
                status=status,
                start_time=begin * _MS,
                end_time=finish * _MS,
                instrumentation_scope=_SCOPE,
            )
        )

    def session(self, stats: SessionStats, parent: int | None, *, turns_only: bool = False) -> None:
        """The session's span (unless `turns_only`: live export sends it last), its turns, calls and tools, then
        its children under the tool calls that spawned them."""
        sid = stats.session
        root = span_id(sid, "session")
        if not turns_only:
            self.add(
                f"session {sid}",
                root,
                parent,
                stats.started,
                stats.ended,
                {
                    "gen_ai.conversation.id": sid,
                    "dsh.session.title": stats.title,
                    "dsh.turns": stats.turns,
                    "dsh.model_calls": stats.model_calls,
                    "dsh.tool_calls": stats.tool_calls,
                    **_usage(stats),
                    "dsh.cost": stats.cost,
                    "dsh.currency": stats.currency,
                },
            )
        turns = {turn.turn: turn for turn in stats.per_turn}
        for turn in stats.per_turn:
            self.turn(sid, turn, root)
        content = None if self.content is None else self.content.get(sid)
        seen: dict[tuple[int, int, str], int] = {}
        for call in stats.calls:
            key = (call.turn, call.step, call.kind)
            seen[key] = seen.get(key, 0) + 1
            owner = turns.get(call.turn)
            self.call(
                sid, call, seen[key], root if owner is None else span_id(sid, "turn", owner.turn), content
            )
        for run in stats.tool_runs:
            owner = turns.get(run.turn)
            self.tool(sid, run, root if owner is None else span_id(sid, "turn", owner.turn), content)
        runs = {run.call_id for run in stats.tool_runs}
        for child in stats.children:
            by = child.spawned_by or {}
            call_id = by.get("callId")
            self.session(child, span_id(sid, "tool", call_id) if call_id in runs else root)

    def turn(self, sid: str, turn: TurnStats, parent: int) -> None:
        self.add(
            "invoke_agent dsh",
            span_id(sid, "turn", turn.turn),
            parent,
            turn.start,
            turn.end,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "dsh",
                "gen_ai.conversation.id": sid,
                "dsh.turn": turn.turn,
                "dsh.turn.ending": turn.ending,
                "dsh.steps": turn.steps,
                "dsh.model_calls": turn.model_calls,
                "dsh.tool_calls": turn.tool_calls,
                **_usage(turn),
                "dsh.cost": turn.cost,
            },
            error=f"turn ended {turn.ending}" if turn.ending == "error" else None,
        )

    def call(self, sid: str, call: CallStats, nth: int, parent: int, content: Content | None) -> None:
        finish = call.finish
        reason = None if finish is None else _FINISH_REASONS.get(finish, "error")
        output = None
        if content is not None and reason in ("stop", "tool_calls", "length"):
            output = content.outputs.get((call.turn, call.step))
        self.add(
            f"chat {call.model or 'unknown'}",
            span_id(sid, "call", call.kind, call.turn, call.step, nth),
            parent,
            call.start,
            None if call.start is None or call.duration_ms is None else call.start + call.duration_ms,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": call.provider,
                "gen_ai.system": call.provider,
                "gen_ai.request.model": call.model,
                "gen_ai.response.model": call.model,
                "gen_ai.conversation.id": sid,
                "gen_ai.response.finish_reasons": None if reason is None else (reason,),
                "gen_ai.response.time_to_first_chunk": None if call.ttft_ms is None else call.ttft_ms / 1000,
                **_usage(call),
                "gen_ai.output.messages": output,
                "error.type": finish if reason == "error" else None,
                "dsh.call.kind": call.kind,
                "dsh.turn": call.turn,
                "dsh.step": call.step,
                "dsh.attempt": call.attempt,
                "dsh.finish": finish,
                "dsh.cost": call.cost,
            },
            kind=SpanKind.CLIENT,
            error=finish if reason == "error" else None,
        )

    def tool(self, sid: str, run: ToolRun, parent: int, content: Content | None) -> None:
        error = (run.error_code or "tool error") if run.error else None
        self.add(
            f"execute_tool {run.name}",
            span_id(sid, "tool", run.call_id),
            parent,
            run.start,
            run.end,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": run.name,
                "gen_ai.tool.call.id": run.call_id,
                "gen_ai.tool.type": "function",
                "gen_ai.conversation.id": sid,
                "gen_ai.tool.call.arguments": None if content is None else content.arguments.get(run.call_id),
                "gen_ai.tool.call.result": None if content is None else content.results.get(run.call_id),
                "error.type": error,
                "dsh.turn": run.turn,
                "dsh.step": run.step,
            },
            error=error,
        )


def _usage(figures: Any) -> dict[str, Any]:
    """GenAI usage attributes: `input_tokens` counts every input token (cache hits and writes included), as the
    conventions ask; the cache and reasoning shares are their own attributes."""
    return {
        "gen_ai.usage.input_tokens": figures.input_tokens
        + figures.cache_read_tokens
        + figures.cache_write_tokens,
        "gen_ai.usage.output_tokens": figures.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": figures.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": figures.cache_write_tokens or None,
        "gen_ai.usage.reasoning.output_tokens": figures.reasoning_tokens or None,
    }


def session_spans(
    stats: SessionStats,
    *,
    root: str,
    parent: int | None = None,
    content: dict[str, Content] | None = None,
    turns_only: bool = False,
    res: Resource | None = None,
) -> list[ReadableSpan]:
    """The spans of `stats` and its children, in the trace of session `root` (the tree's root session), under
    span `parent` (None: the session span is the trace's root). `content` maps session ids to what they said, for a
    deployment that exports it. `turns_only` leaves the session span out (live export sends it once, last)."""
    builder = _Builder(trace_id(root), res or resource(), content)
    builder.session(stats, parent, turns_only=turns_only)
    return builder.spans
