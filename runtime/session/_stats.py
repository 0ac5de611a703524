"""Session statistics: what a session cost and where its time went, folded from its log as the store streams it.

`session_stats(store, id, prices=...)` reads a session's own events once (a fork's prefix is its parent's)
and counts turns, steps, model calls (each attempt; retries; compaction and title calls), tool calls per tool with
their errors and time, the tokens of every usage chunk and summariser call, time to first token and model time per
call, and the cost of each call from a `PriceTable` (per provider and model, per million tokens). Its children
(subagents and forks) are folded the same way, listed beside it and summed apart. Times are the log's own: a
duration whose ends are unknown (a recording that wrote `time: 0`) or out of order counts as unknown, never as
negative. The fold decodes only what it counts: a chunk's data is parsed when it opens a call or says `usage` or
`finish`, so the fold costs little more than reading the log.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from dsh.runtime.kernel import ServiceKey
from dsh.runtime.llm import TokenUsage, ToolResultBlock

from ._events import (
    AssistantChunk,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    LlmRetry,
    RequestContext,
    RequestHeader,
    SessionTitle,
    SessionTitleLlmRequest,
    StepEnd,
    StepStart,
    StoredEvent,
    ToolCall,
    ToolResultEvent,
    TurnEnd,
    TurnStart,
)
from .store._base import SessionInfo
from .store._protocol import SessionStoreProtocol

__all__ = [
    "PRICES",
    "CallStats",
    "Figures",
    "Price",
    "PriceTable",
    "SessionStats",
    "ToolRun",
    "ToolStats",
    "TurnStats",
    "fold_stats",
    "ordered_tools",
    "session_stats",
]


# ---------------------------------------------------------------- prices


class Price(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What one provider's model costs, per million tokens: `input` (cache misses), `output` (reasoning included),
    `cache_read` (cache hits; default `input`) and `cache_write` (default `input`). `provider` or `model` `"*"`
    matches any."""

    provider: str
    model: str
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


class PriceTable(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Prices in one `currency`. The most specific entry wins: provider and model, then the provider's `"*"`, then
    `"*"`'s model, then `"*"`/`"*"`."""

    currency: str = "USD"
    prices: tuple[Price, ...] = ()

    def price(self, provider: str | None, model: str | None) -> Price | None:
        """The entry for a call to `model` at `provider`, or None when the table has none."""
        best: tuple[int, Price] | None = None
        for entry in self.prices:
            if entry.provider not in ("*", provider) or entry.model not in ("*", model):
                continue
            rank = (entry.provider != "*") * 2 + (entry.model != "*")
            if best is None or rank > best[0]:
                best = (rank, entry)
        return None if best is None else best[1]

    def cost(self, figures: Figures, provider: str | None, model: str | None) -> float | None:
        """The cost of `figures`' tokens at the price of `model` at `provider` (None: the table has no entry)."""
        entry = self.price(provider, model)
        if entry is None:
            return None
        cache_read = entry.input if entry.cache_read is None else entry.cache_read
        cache_write = entry.input if entry.cache_write is None else entry.cache_write
        return (
            figures.input_tokens * entry.input
            + figures.output_tokens * entry.output
            + figures.cache_read_tokens * cache_read
            + figures.cache_write_tokens * cache_write
        ) / 1_000_000


PRICES = ServiceKey[PriceTable]("prices")
"""The deployment's price table (provided by the `stats` plugin); `dsh sessions stats` reads it to state costs."""


# ---------------------------------------------------------------- figures


class Figures(msgspec.Struct, kw_only=True):
    """The summable figures of a session, a turn or a sum of sessions. Times are in ms; `model_ms` sums the calls'
    durations, `tool_ms` the tool calls' (call to result), `wall_ms` the turns' (start to end). `cost` is None when
    no price table was given; with one, it sums the calls it prices (`SessionStats.unpriced` names the others)."""

    turns: int = 0
    steps: int = 0
    model_calls: int = 0
    retries: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None
    model_ms: int = 0
    tool_ms: int = 0
    wall_ms: int = 0

    def add(self, other: Figures) -> None:
        """Add `other`'s figures to these (a cost of None adds nothing). Spelled out: the fold calls it per call."""
        self.turns += other.turns
        self.steps += other.steps
        self.model_calls += other.model_calls
        self.retries += other.retries
        self.tool_calls += other.tool_calls
        self.tool_errors += other.tool_errors
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.model_ms += other.model_ms
        self.tool_ms += other.tool_ms
        self.wall_ms += other.wall_ms
        if other.cost is not None:
            self.cost = other.cost if self.cost is None else self.cost + other.cost

    def add_usage(self, usage: TokenUsage) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.reasoning_tokens += usage.reasoning_tokens or 0
        self.cache_read_tokens += usage.cache_read_tokens or 0
        self.cache_write_tokens += usage.cache_write_tokens or 0

    def figures(self) -> Figures:
        """These figures alone (a copy, as a plain `Figures`)."""
        total = Figures()
        total.add(self)
        return total


class CallStats(Figures, kw_only=True):
    """One model call (one attempt): `kind` `step` (the agent's), `compaction` (a summariser) or `title`; where it
    went; how it finished (`stop`, `tool-calls`, `max-tokens`, an error's code, or None when the log holds no
    finish); when it started (the log's time of the last event before its first chunk), its time to first token
    and its duration (to its finish). Its `model_calls` is 1 and `retries` 1 when it was a retry."""

    kind: str = "step"
    turn: int = 0
    step: int = 0
    attempt: int = 1
    provider: str | None = None
    model: str | None = None
    finish: str | None = None
    start: int | None = None
    ttft_ms: int | None = None
    duration_ms: int | None = None


class ToolRun(msgspec.Struct, kw_only=True):
    """One tool call: its id, tool, turn and step, when it was called and when its result came (None: unknown, or
    no result logged), and whether the result was an error (with its code when the log states one)."""

    call_id: str
    name: str
    turn: int = 0
    step: int = 0
    start: int | None = None
    end: int | None = None
    error: bool = False
    error_code: str | None = None


class ToolStats(msgspec.Struct, kw_only=True):
    """One tool's calls, the results that were errors, and the time from call to result."""

    calls: int = 0
    errors: int = 0
    time_ms: int = 0


class TurnStats(Figures, kw_only=True):
    """One turn's figures, and how it ended (None while it is open)."""

    turn: int = 0
    ending: str | None = None
    start: int | None = None
    end: int | None = None


class SessionStats(Figures, kw_only=True):
    """A session's figures (its own events), the calls and turns they sum, per-tool figures, the median and worst
    time to first token, its first and last known times (`started`, `ended`), every tool call (`tool_runs`), its children (each with its own `SessionStats`) and their sum, and `total` (this session
    and every descendant). `how` says how a child hangs off its parent (`fork @N` or `spawned`) and
    `spawned_by` which call started it."""

    session: str
    title: str | None = None
    currency: str | None = None
    unpriced: tuple[str, ...] = ()
    ttft_ms_median: float | None = None
    ttft_ms_max: int | None = None
    started: int | None = None
    ended: int | None = None
    tools: dict[str, ToolStats] = msgspec.field(default_factory=dict)
    tool_runs: tuple[ToolRun, ...] = ()
    per_turn: tuple[TurnStats, ...] = ()
    calls: tuple[CallStats, ...] = ()
    how: str | None = None
    spawned_by: dict[str, Any] | None = None
    children: tuple[SessionStats, ...] = ()
    children_total: Figures = msgspec.field(default_factory=Figures)
    total: Figures = msgspec.field(default_factory=Figures)


# ---------------------------------------------------------------- light decoders (only what the fold reads)


class _Failure(msgspec.Struct):
    code: str = "UNKNOWN"


class _Reason(msgspec.Struct):
    kind: str
    failure: _Failure | None = None


class _ChunkBody(msgspec.Struct):
    type: str
    usage: TokenUsage | None = None
    reason: _Reason | None = None


class _Chunk(msgspec.Struct):
    turn: int
    step: int
    chunk: _ChunkBody


class _TurnBound(msgspec.Struct):
    turn: int
    reason: _Reason | None = None


class _Step(msgspec.Struct):
    turn: int
    step: int


class _Route(msgspec.Struct):
    provider: str | None = None
    model: str | None = None


class _HeaderConfig(msgspec.Struct):
    config: _Route


class _Header(msgspec.Struct):
    header: _HeaderConfig


class _ToolCall(msgspec.Struct, rename="camel"):
    call_id: str
    name: str
    turn: int = 0
    step: int = 0


class _Compaction(msgspec.Struct, rename="camel"):
    compaction_id: str | None = None
    turn: int | None = None
    llm_stream_call: bool | None = None
    usage: TokenUsage | None = None
    failure: _Failure | None = None
    provider: str | None = None
    model: str | None = None


class _TitleRequest(msgspec.Struct):
    """`session/title-llm-request`: where the title call went."""

    route: _Route | None = None


class _Title(msgspec.Struct):
    """`session/title`: the title, and the usage of the call that made it (when a model made it)."""

    title: str = ""
    usage: TokenUsage | None = None


_CHUNK = msgspec.json.Decoder(_Chunk)
_TURN = msgspec.json.Decoder(_TurnBound)
_STEP = msgspec.json.Decoder(_Step)
_ROUTE = msgspec.json.Decoder(_Route)
_HEADER = msgspec.json.Decoder(_Header)
_TOOL_CALL = msgspec.json.Decoder(_ToolCall)
_COMPACTION = msgspec.json.Decoder(_Compaction)
_TITLE_REQUEST = msgspec.json.Decoder(_TitleRequest)
_TITLE = msgspec.json.Decoder(_Title)


def _finish(reason: _Reason) -> str:
    return reason.failure.code if reason.kind in ("error", "aborted") and reason.failure else reason.kind


def _span(start: int | None, end: int | None) -> int | None:
    """`end - start` in ms, or None when either time is unknown (absent or not positive) or they are out of order."""
    if start is None or end is None or start <= 0 or end <= 0 or end < start:
        return None
    return end - start


# ---------------------------------------------------------------- the fold


class _Fold:
    """The running state of one session's fold (one instance per fold; `result()` once at the end)."""

    def __init__(self, session: str) -> None:
        self.stats = SessionStats(session=session)
        self.calls: list[CallStats] = []
        self.turns: list[TurnStats] = []
        self.turn: TurnStats | None = None
        self.turn_start: int | None = None
        self.step = 0
        self.mark: int | None = None  # the time of the last non-chunk event: when a request went out
        self.route = _Route()
        self.call: CallStats | None = None
        self.last_chunk: int | None = None
        self.attempts: dict[tuple[int, int], int] = {}
        self.tool_calls: dict[str, tuple[ToolRun, TurnStats | None]] = {}
        self.runs: list[ToolRun] = []
        self.started: int | None = None
        self.ended: int | None = None
        self.compactions: dict[str, int] = {}  # compaction id -> its start time
        self.compaction_called: set[str] = set()
        self.title_asked: tuple[int, _Route] | None = None

    # -- counting helpers
    def _count(self, **figures: int) -> None:
        for target in (self.stats, self.turn):
            if target is not None:
                for name, value in figures.items():
                    setattr(target, name, getattr(target, name) + value)

    def _open(self, chunk: _Chunk, time: int) -> CallStats:
        key = (chunk.turn, chunk.step)
        attempt = self.attempts.get(key, 0) + 1
        self.attempts[key] = attempt
        call = CallStats(
            kind="step",
            turn=chunk.turn,
            step=chunk.step,
            attempt=attempt,
            provider=self.route.provider,
            model=self.route.model,
            start=self.mark,
            ttft_ms=_span(self.mark, time),
            model_calls=1,
            retries=int(attempt > 1),
        )
        self.call = call
        self.last_chunk = time
        return call

    def _close(self, end: int | None) -> None:
        call = self.call
        if call is None:
            return
        self.call = None
        call.duration_ms = _span(call.start, end)
        call.model_ms = call.duration_ms or 0
        self._record(call)

    def _record(self, call: CallStats) -> None:
        self.calls.append(call)
        for target in (self.stats, self.turn):
            if target is not None:
                target.add(call)

    # -- per event
    def chunk(self, event: StoredEvent) -> None:
        data = event.data
        call = self.call
        if call is None:
            parsed = _CHUNK.decode(data)
            call = self._open(parsed, event.time)
        else:  # `fold_stats` passes an open call's chunk here only when it may be its usage or its finish
            parsed = _CHUNK.decode(data)
        self.last_chunk = event.time
        body = parsed.chunk
        if body.type == "usage" and body.usage is not None:
            call.add_usage(body.usage)
        elif body.type == "finish" and body.reason is not None:
            call.finish = _finish(body.reason)
            self._close(event.time)

    def event(self, event: StoredEvent) -> None:
        kind = event.type
        time = event.time
        if time > 0:
            if self.started is None or time < self.started:
                self.started = time
            if self.ended is None or time > self.ended:
                self.ended = time
        if kind == TurnStart.TAG:
            self._close(self.last_chunk)
            self.turn = TurnStats(turn=_TURN.decode(event.data).turn, start=time if time > 0 else None)
            self.turn_start = time
            self.stats.turns += 1
            self.turn.turns = 1
        elif kind == TurnEnd.TAG:
            self._close(self.last_chunk)
            bound = _TURN.decode(event.data)
            turn = self.turn if self.turn is not None else TurnStats(turn=bound.turn)
            turn.ending = None if bound.reason is None else bound.reason.kind
            turn.end = time if time > 0 else None
            wall = _span(self.turn_start, time)
            if wall is not None:
                turn.wall_ms = wall
                self.stats.wall_ms += wall
            self.turns.append(turn)
            self.turn = None
            self.turn_start = None
        elif kind == StepStart.TAG:
            self._close(self.last_chunk)
            self.step = _STEP.decode(event.data).step
            self._count(steps=1)
        elif kind == StepEnd.TAG:
            self._close(self.last_chunk)
        elif kind == RequestContext.TAG:
            self.route = _ROUTE.decode(event.data)
        elif kind == RequestHeader.TAG:
            self.route = _HEADER.decode(event.data).header.config
        elif kind == LlmRetry.TAG:
            self._close(self.last_chunk)
        elif kind == ToolCall.TAG:
            call = _TOOL_CALL.decode(event.data)
            run = ToolRun(call_id=call.call_id, name=call.name, turn=call.turn, step=call.step, start=time)
            self.runs.append(run)
            self.tool_calls[call.call_id] = (run, self.turn)
            self.stats.tools.setdefault(call.name, ToolStats()).calls += 1
            self._count(tool_calls=1)
        elif kind == ToolResultEvent.TAG:
            self._tool_result(event)
        elif kind.startswith("compaction/"):
            self._compaction(kind, event)
        elif kind == SessionTitleLlmRequest.TAG:
            self.title_asked = (time, _TITLE_REQUEST.decode(event.data).route or self.route)
        elif kind == SessionTitle.TAG:
            self._title(event)
        self.mark = time

    def _tool_result(self, event: StoredEvent) -> None:
        view = event.view()
        assert isinstance(view, ToolResultEvent), "the event table decodes tool/result as ToolResultEvent"
        data = view.data
        blocks = [b for b in data.message.content if isinstance(b, ToolResultBlock)]
        source = data.message.source
        call_id = getattr(source, "call_id", None) or (blocks[0].tool_call_id if blocks else None)
        failed = data.error is not None or any(b.is_error for b in blocks)
        called = self.tool_calls.pop(call_id, None) if call_id is not None else None
        if called is None:
            return  # a result with no logged call (a repair closer, TOOL_NOT_STARTED): no call to count it against
        run, turn = called
        run.end = event.time if event.time > 0 else None
        run.error = failed
        run.error_code = None if data.error is None else data.error.code
        tool = self.stats.tools.setdefault(run.name, ToolStats())
        took = _span(run.start, event.time) or 0
        tool.time_ms += took
        tool.errors += failed
        for target in (self.stats, turn):
            if target is not None:
                target.tool_ms += took
                target.tool_errors += failed

    def _compaction(self, kind: str, event: StoredEvent) -> None:
        data = _COMPACTION.decode(event.data)
        key = data.compaction_id or f"seq-{event.seq}"
        if kind == CompactionStart.TAG:
            self._close(self.last_chunk)
            self.compactions[key] = event.time
            return
        if kind not in (CompactionSummary.TAG, CompactionEnd.TAG) or not data.llm_stream_call:
            return
        if key in self.compaction_called:
            return  # the summary counted this call; its end only closes the bracket
        self.compaction_called.add(key)
        start = self.compactions.get(key, self.mark)
        took = _span(start, event.time)
        call = CallStats(
            kind="compaction",
            turn=data.turn or (self.turn.turn if self.turn is not None else 0),
            step=self.step,
            provider=data.provider or self.route.provider,
            model=data.model or self.route.model,
            finish=data.failure.code if data.failure is not None else "stop",
            start=start,
            duration_ms=took,
            model_ms=took or 0,
            model_calls=1,
        )
        if data.usage is not None:
            call.add_usage(data.usage)
        self._record(call)

    def _title(self, event: StoredEvent) -> None:
        data = _TITLE.decode(event.data)
        self.stats.title = data.title or None
        asked_for, self.title_asked = self.title_asked, None
        if asked_for is None:
            return  # a title set by hand or by a fallback: no model call
        asked, route = asked_for
        took = _span(asked, event.time)
        call = CallStats(
            kind="title",
            turn=self.turns[-1].turn if self.turns else 0,
            provider=route.provider,
            model=route.model,
            finish="stop",
            start=asked,
            duration_ms=took,
            model_ms=took or 0,
            model_calls=1,
        )
        if data.usage is not None:
            call.add_usage(data.usage)
        self.calls.append(call)
        self.stats.add(call)  # after the turn that asked for it: the session's, not a turn's

    def result(self, prices: PriceTable | None) -> SessionStats:
        self._close(self.last_chunk)
        if self.turn is not None:  # an open last turn (a live session, or one never repaired)
            self.turns.append(self.turn)
        stats = self.stats
        stats.calls = tuple(self.calls)
        stats.tool_runs = tuple(self.runs)
        stats.started, stats.ended = self.started, self.ended
        stats.per_turn = tuple(self.turns)
        ttfts = [c.ttft_ms for c in self.calls if c.ttft_ms is not None]
        stats.ttft_ms_median = statistics.median(ttfts) if ttfts else None
        stats.ttft_ms_max = max(ttfts) if ttfts else None
        if prices is not None:
            self._price(prices)
        return stats

    def _price(self, prices: PriceTable) -> None:
        stats = self.stats
        stats.currency = prices.currency
        stats.cost = 0.0
        unpriced: set[str] = set()
        by_turn = {turn.turn: turn for turn in self.turns}
        for turn in self.turns:
            turn.cost = 0.0
        for call in self.calls:
            cost = prices.cost(call, call.provider, call.model)
            if cost is None:
                unpriced.add(f"{call.provider or '?'}/{call.model or '?'}")
                continue
            call.cost = cost
            stats.cost += cost
            owner = by_turn.get(call.turn)
            if owner is not None and call.kind != "title":
                owner.cost = (owner.cost or 0.0) + cost
        stats.unpriced = tuple(sorted(unpriced))


def fold_stats(
    session: str, events: Iterable[StoredEvent], *, prices: PriceTable | None = None
) -> SessionStats:
    """The figures of one log (`events` in seq order), without children."""
    fold = _Fold(session)
    chunk, event = fold.chunk, fold.event
    for stored in events:
        if stored.type != AssistantChunk.TAG:
            event(stored)
        elif fold.call is not None and '"usage"' not in stored.data and '"finish"' not in stored.data:
            fold.last_chunk = stored.time  # a delta of an open call (most rows): nothing to decode
        else:
            chunk(stored)
    return fold.result(prices)


def _how(info: SessionInfo) -> str:
    return f"fork @{info.seed_length}" if info.seed_length is not None else "spawned"


def session_stats(
    store: SessionStoreProtocol,
    session_id: str,
    *,
    prices: PriceTable | None = None,
    children: bool = True,
    _seen: set[str] | None = None,
) -> SessionStats:
    """The figures of a session's own events (a fork's first `seed_length` events are its parent's, by reference
    or, in an imported log, as a copy), and, with
    `children`, of each fork and subagent below it (a session met twice is counted once)."""
    info = store.info(session_id)
    start = info.seed_length or 0  # a fork's prefix is its parent's, whether inherited or copied on import
    stats = fold_stats(info.id, store.events(info.id, start=start), prices=prices)
    if info.parent_id is not None:
        stats.how = _how(info)
        stats.spawned_by = None if info.spawned_by is None else msgspec.to_builtins(info.spawned_by)
    seen: set[str] = _seen if _seen is not None else {str(info.id)}
    kids: list[SessionStats] = []
    if children:
        for child in store.children(info.id):
            if child.id in seen:
                continue
            seen.add(child.id)
            kids.append(session_stats(store, child.id, prices=prices, _seen=seen))
    stats.children = tuple(kids)
    stats.children_total = _sum(kid.total for kid in kids)
    if prices is not None and stats.children_total.cost is None:
        stats.children_total.cost = 0.0
    total = stats.figures()
    total.add(stats.children_total)
    stats.total = total
    return stats


def _sum(figures: Iterable[Figures]) -> Figures:
    total = Figures()
    for each in figures:
        total.add(each)
    return total


def ordered_tools(stats: SessionStats) -> Sequence[tuple[str, ToolStats]]:
    """The session's tools, most called first."""
    return sorted(stats.tools.items(), key=lambda item: (-item[1].calls, item[0]))
