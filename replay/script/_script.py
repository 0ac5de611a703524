"""The replay script of a recorded log: every model call it made, keyed `(turn, step, attempt)`, with its chunks.

Derivation (spec/session-and-replay.md §3.2, keyed as ARCHITECTURE.md's Replay says):

* `assistant/chunk` events are grouped by their (turn, step); a group is closed by its `finish` chunk, so a retry
  inside a step is the next attempt of the same (turn, step). A chunk of another (turn, step), a
  `compaction/summary` or the end of the log closes an open group *unfinished* (a stream cut off by cancellation,
  or a torn log): such an entry is refused with a `ScriptError` naming its key unless an override covers it.
* A marked local compaction call (`compaction/summary` with `llmStreamCall: true` and its `rawOutput`) becomes a
  synthetic entry of kind `compaction`: `block-start`/`block-end` per raw block, `usage` when recorded, then
  `finish{stop}`. A failed one (`compaction/end` with `llmStreamCall: true` and a `failure`) becomes that stream
  from its `rawOutput` when present, else a single `finish{error}`. Its key is the logged `callKey`; a log without
  one (older, or the original's) derives dsh.plugins.compaction's: `CallKey(turn, step, n, purpose="compaction")`,
  `step` the step the compaction serves (the open step, or between steps the next one), `n` counting compaction
  calls within that (turn, step) from 1. The loop's calls keep `purpose="step"`, so a compaction never shifts their
  attempts.
* A title call (`session/title-llm-request`, answered by the next `session/title`) becomes a synthetic entry of
  kind `title`: the recorded title as one text block, its `usage` when recorded, then `finish{stop}` (a request
  with no title after it: a single `finish{error}`, as the call gave none). Its key is dsh.plugins.titles':
  `CallKey(turn, 0, n, purpose="title")`, `turn` the turn that had just ended, `n` counting title calls after it.
* A child log is sliced at its `seedLength`: only events at seq >= seedLength feed its script.

`recorded_turns` lists each turn's recorded user inputs, what a driver re-running the log sends.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

import msgspec

from dsh.runtime.llm import (
    AssistantBlock,
    BlockEnd,
    BlockStart,
    BlockType,
    CallKey,
    Finish,
    FinishError,
    FinishStop,
    LlmFailure,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
    UserMessage,
    UserSource,
)
from dsh.runtime.session import (
    AssistantChunk,
    AssistantChunkData,
    BracketData,
    CompactionEnd,
    CompactionSummary,
    CoreEvent,
    InboxSpliced,
    OpaqueEvent,
    RequestContext,
    RequestHeader,
    SessionTitle,
    SessionTitleData,
    SessionTitleLlmRequest,
    StepEnd,
    StepStart,
    StoredEvent,
    SummaryData,
    TurnEnd,
    TurnStart,
    UserMessageEvent,
)

from ..recordings._errors import ScriptError, format_call
from ..recordings._source import LogInfo, RecordedLog
from ._inbox import Delivery, Positions

__all__ = [
    "EntryKind",
    "FinishKind",
    "Hang",
    "RecordedTurn",
    "Script",
    "ScriptEntry",
    "Throw",
    "derive_entries",
    "recorded_script",
    "recorded_turns",
]

EntryKind = Literal["model", "compaction", "title"]
FinishKind = Literal["stop", "tool-calls", "max-tokens", "error", "aborted"]


@dataclass(frozen=True, slots=True)
class Throw:
    """An override's ending: after the entry's chunks, the call fails with `LlmCallError(code, message)`, which
    `LlmRuntime` turns into `finish{error}` as it does for a live adapter's failure."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Hang:
    """An override's ending: after the entry's chunks, touch `ready_file` (when set) and wait until cancelled."""

    ready_file: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptEntry:
    """One model call of a recorded session. `chunks` are served in order; a complete recorded entry ends with its
    `finish`. `end` is an override's ending instead of a finish; `override` names the override op that shaped the
    entry (None: as recorded). `place` is where it was recorded (its first chunk, or the compaction summary)."""

    call: CallKey
    kind: EntryKind
    chunks: tuple[StreamChunk, ...]
    place: str
    end: Throw | Hang | None = None
    override: str | None = None

    @property
    def finished(self) -> bool:
        """Whether serving it ends the call: a finish chunk last, or an override's ending."""
        return self.end is not None or (bool(self.chunks) and isinstance(self.chunks[-1], Finish))

    @property
    def finish_kind(self) -> FinishKind | None:
        """How the served call ends: the finish reason's kind; `error` for a throw, `aborted` for a hang (the
        caller cancels it); None while unfinished."""
        if isinstance(self.end, Throw):
            return "error"
        if isinstance(self.end, Hang):
            return "aborted"
        last = self.chunks[-1] if self.chunks else None
        if not isinstance(last, Finish):
            return None
        kind: FinishKind = type(last.reason).__struct_config__.tag  # type: ignore[assignment]  # the union's tags are exactly FinishKind
        return kind

    def describe(self) -> str:
        """One line for people: key, kind, chunk count and ending."""
        count = f"{len(self.chunks)} chunk{'' if len(self.chunks) == 1 else 's'}"
        if isinstance(self.end, Throw):
            ending = f"then throws {self.end.code}"
        elif isinstance(self.end, Hang):
            ending = "then hangs until cancelled"
        else:
            ending = f"finish {self.finish_kind}" if self.finished else "no finish"
        return f"{format_call(self.call)} {self.kind}, {count}, {ending} ({self.place})"


@dataclass(frozen=True, slots=True)
class Script:
    """The script of one recorded log: its entries in recorded order, the provider ids its request headers name (in
    order of first appearance), and the context window its last `request/context` for each (provider, model) stated
    (None: it logged none for that route)."""

    log: LogInfo
    entries: tuple[ScriptEntry, ...]
    providers: tuple[str, ...]
    windows: Mapping[tuple[str, str], int | None] = field(default_factory=dict)
    deliveries: tuple[Delivery, ...] = ()
    """The inputs queued in the log after its seed, in order, with the positions they were spliced at."""


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    """One recorded turn and the user inputs logged in it (`user/message` appended with source `user`), in order."""

    turn: int
    inputs: tuple[UserMessage, ...]


COMPACTION = "compaction"
"""The `CallKey.purpose` of dsh.plugins.compaction's summariser calls."""
TITLE = "title"
"""The `CallKey.purpose` of dsh.plugins.titles' calls."""


def _view(log: RecordedLog, event: StoredEvent, line: int | None) -> CoreEvent | OpaqueEvent:
    """The event's typed value (decoded once, through the log's event table); bad data is a `ScriptError` naming
    where it was recorded."""
    try:
        return event.view()
    except msgspec.DecodeError as error:
        raise ScriptError(
            f"bad {event.type} (seq {event.seq}): {error}", place=log.place(event, line)
        ) from None


def _block_type(block: AssistantBlock) -> BlockType:
    if isinstance(block, TextBlock):
        return "text"
    return "reasoning" if isinstance(block, ReasoningBlock) else "tool-call"


def compaction_chunks(
    raw_output: tuple[AssistantBlock, ...], usage: TokenUsage | None, *, failure: LlmFailure | None = None
) -> tuple[StreamChunk, ...]:
    """The canonical stream of a compaction call from its raw output (the original delta partitioning is lost),
    ending `finish{stop}`, or `finish{error}` for a failed call."""
    chunks: list[StreamChunk] = []
    for index, block in enumerate(raw_output):
        chunks.append(BlockStart(index=index, block_type=_block_type(block)))
        chunks.append(BlockEnd(index=index, block=block))
    if usage is not None:
        chunks.append(UsageChunk(usage))
    chunks.append(Finish(reason=FinishStop() if failure is None else FinishError(failure)))
    return tuple(chunks)


class _Deriver:
    """The walk of §3.2, one event at a time."""

    def __init__(self, log: RecordedLog) -> None:
        self.log = log
        self.entries: list[ScriptEntry] = []
        self.providers: dict[str, None] = {}
        self.windows: dict[tuple[str, str], int | None] = {}
        self.attempts: dict[tuple[int, int], int] = {}
        self.compactions: dict[tuple[int, int], int] = {}
        self.group: tuple[int, int] | None = None
        self.chunks: list[StreamChunk] = []
        self.place = ""
        self.open_turn: int | None = None
        self.last_turn = 0
        self.open_step: int | None = None
        self.last_step = 0
        self.positions = Positions()
        self.deliveries: list[Delivery] = []
        self.titles: dict[int, int] = {}
        self.title_asked: tuple[int, str] | None = (
            None  # the turn and place of a title request not yet answered
        )

    def close(self) -> None:
        if self.group is None:
            return
        attempt = self.attempts.get(self.group, 0) + 1
        self.attempts[self.group] = attempt
        turn, step = self.group
        call = CallKey(turn=turn, step=step, attempt=attempt)
        self.entries.append(ScriptEntry(call, "model", tuple(self.chunks), self.place))
        self.group = None
        self.chunks = []

    def chunk(self, data: AssistantChunkData, event: StoredEvent, line: int | None) -> None:
        key = (data.turn, data.step)
        if key != self.group:
            self.close()
            self.group = key
            self.place = self.log.place(event, line)
        self.chunks.append(data.chunk)
        if isinstance(data.chunk, Finish):
            self.close()

    def summary(self, summary: SummaryData | BracketData, place: str, seq: int) -> None:
        """A `compaction/summary` (the call succeeded), or a `compaction/end` (only a failed call adds an entry)."""
        self.close()
        end = isinstance(summary, BracketData)
        failure = summary.failure if isinstance(summary, BracketData) else None
        if not summary.llm_stream_call or (end and failure is None):
            return  # no call through this context (a template or remote summariser), or a success seen already
        turn = self.open_turn if self.open_turn is not None else self.last_turn + 1
        if self.open_turn is None:
            step = 1
        else:
            step = self.open_step if self.open_step is not None else self.last_step + 1
        number = self.compactions.get((turn, step), 0) + 1
        self.compactions[(turn, step)] = number
        # the key the call was made with, as logged; a log from before `callKey` (or the original's) derives it
        call = summary.call_key or CallKey(turn=turn, step=step, attempt=number, purpose=COMPACTION)
        if failure is not None:
            chunks = compaction_chunks(summary.raw_output or (), summary.usage, failure=failure)
        elif summary.raw_output is None:
            raise ScriptError(
                f"compaction/summary (seq {seq}) is marked llmStreamCall but has no rawOutput; the compaction "
                f"call {format_call(call)} cannot be rebuilt (give it rawOutput, or supply the call in override.json)",
                place=place,
                call=call,
            )
        else:
            chunks = compaction_chunks(summary.raw_output, summary.usage)
        self.entries.append(ScriptEntry(call, "compaction", chunks, place))

    def title_request(self, place: str) -> None:
        """A `session/title-llm-request`: a title call after the turn that last ended (or the open one)."""
        self.close()
        self.unanswered_title()
        self.title_asked = (self.open_turn if self.open_turn is not None else self.last_turn, place)

    def title(self, data: SessionTitleData) -> None:
        """A `session/title`: the answer of the pending title call, if one is pending (else a title set by hand)."""
        if self.title_asked is None:
            return
        turn, place = self.title_asked
        self.title_asked = None
        block = TextBlock(data.title)
        chunks: list[StreamChunk] = [
            BlockStart(index=0, block_type="text"),
            TextDelta(index=0, text=data.title),
            BlockEnd(index=0, block=block),
        ]
        if data.usage is not None:
            chunks.append(UsageChunk(usage=data.usage))
        chunks.append(Finish(reason=FinishStop()))
        self.entries.append(ScriptEntry(self._title_key(turn), "title", tuple(chunks), place))

    def unanswered_title(self) -> None:
        """A title request with no title after it: the call gave none (a failure, or nothing usable)."""
        if self.title_asked is None:
            return
        turn, place = self.title_asked
        self.title_asked = None
        failure = LlmFailure(message="the recorded title call gave no title", code="TITLE_NOT_RECORDED")
        self.entries.append(
            ScriptEntry(self._title_key(turn), "title", (Finish(reason=FinishError(failure)),), place)
        )

    def _title_key(self, turn: int) -> CallKey:
        number = self.titles.get(turn, 0) + 1
        self.titles[turn] = number
        return CallKey(turn=turn, step=0, attempt=number, purpose=TITLE)

    def bound(self, view: TurnStart | TurnEnd | StepStart | StepEnd) -> None:
        if isinstance(view, TurnStart):
            self.unanswered_title()
            self.open_turn = view.data.turn
            self.last_turn = max(self.last_turn, self.open_turn)
            self.open_step, self.last_step = None, 0
        elif isinstance(view, TurnEnd):
            self.last_turn = max(self.last_turn, view.data.turn)
            self.open_turn, self.open_step = None, None
        elif isinstance(view, StepStart):
            self.open_step = self.last_step = view.data.step
        else:
            self.open_step = None


_READ = frozenset(
    {
        AssistantChunk.TAG,
        TurnStart.TAG,
        TurnEnd.TAG,
        StepStart.TAG,
        StepEnd.TAG,
        RequestHeader.TAG,
        RequestContext.TAG,
        InboxSpliced.TAG,
        CompactionSummary.TAG,
        CompactionEnd.TAG,
        SessionTitleLlmRequest.TAG,
        SessionTitle.TAG,
    }
)
"""The types the walk reads; every other event is skipped without being decoded."""


def derive_entries(log: RecordedLog) -> tuple[tuple[ScriptEntry, ...], tuple[str, ...]]:
    """Every model call of the log as recorded, unfinished ones included, and the provider ids its request headers
    name."""
    script = recorded_script(log)
    return script.entries, script.providers


def recorded_script(log: RecordedLog) -> Script:
    """The log's script as recorded: every call, unfinished ones included. `derive_script` (`_recording`, where the
    overrides are known) is this plus the overrides and the check that every entry finishes."""
    walk = _derive(log)
    return Script(log.info, tuple(walk.entries), tuple(walk.providers), walk.windows, tuple(walk.deliveries))


def _derive(log: RecordedLog) -> _Deriver:
    walk = _Deriver(log)
    seed = log.info.seed_length
    for event, line in log.events():
        if event.type not in _READ:
            continue
        view = _view(log, event, line)
        if isinstance(view, AssistantChunk):
            if event.seq >= seed:
                walk.chunk(view.data, event, line)
        elif isinstance(view, TurnStart | TurnEnd | StepStart | StepEnd):
            walk.bound(view)
            walk.positions.feed(view)
        elif isinstance(view, InboxSpliced):
            queued = walk.positions.feed(view)
            if event.seq >= seed:
                walk.deliveries.extend(queued)
        elif isinstance(view, RequestHeader):
            walk.providers[view.data.header.config.provider] = None
        elif isinstance(view, RequestContext):
            context = view.data
            walk.windows[(context.provider, context.model)] = context.context_window
        elif isinstance(view, CompactionSummary | CompactionEnd) and event.seq >= seed:
            walk.summary(view.data, log.place(event, line), event.seq)
        elif isinstance(view, SessionTitleLlmRequest) and event.seq >= seed:
            walk.title_request(log.place(event, line))
        elif isinstance(view, SessionTitle) and event.seq >= seed:
            walk.title(view.data)
    walk.close()
    walk.unanswered_title()
    return walk


def recorded_turns(log: RecordedLog) -> tuple[RecordedTurn, ...]:
    """Each turn of the log (after its seed) with the user inputs recorded in it, in order: what a driver sends to
    re-run the log. A user input logged before its `turn/start` belongs to the turn that opens next."""
    turns: list[RecordedTurn] = []
    current: int | None = None
    inputs: list[UserMessage] = []
    pending: list[UserMessage] = []
    seed = log.info.seed_length

    def flush() -> None:
        if current is not None:
            turns.append(RecordedTurn(current, tuple(inputs)))

    for event, line in _after_seed(log, seed):
        if event.type == TurnStart.TAG:
            flush()
            started = _view(log, event, line)
            assert isinstance(started, TurnStart), "the event table decodes turn/start as TurnStart"
            current = started.data.turn
            inputs = [*pending]
            pending = []
        elif event.type == UserMessageEvent.TAG and event.surface_op == "append":
            said = _view(log, event, line)
            assert isinstance(said, UserMessageEvent), "the event table decodes user/message as UserMessage"
            if not isinstance(said.data.source, UserSource):
                continue
            (inputs if current is not None else pending).append(said.data)
        elif event.type == TurnEnd.TAG:
            flush()
            current, inputs = None, []
    flush()
    if pending:
        turns.append(RecordedTurn(turns[-1].turn + 1 if turns else 1, tuple(pending)))
    return tuple(turns)


def _after_seed(log: RecordedLog, seed: int) -> Iterator[tuple[StoredEvent, int | None]]:
    for event, line in log.events():
        if event.seq >= seed:
            yield event, line
