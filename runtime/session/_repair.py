"""Resume and crash repair (spec §1.8-1.9): close an open last turn with synthetic tool results, `step/end` and
`turn/end{interrupted}`, then mark the end of the seed with `session/end-seed`."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.runtime.llm import CallId, MessageId, TextBlock, ToolResultBlock, ToolSource, UserMessage

from ._events import (
    AssistantChunk,
    EmptyData,
    Event,
    SessionEndSeed,
    StepData,
    StepEnd,
    StoredEvent,
    ToolResultData,
    ToolResultError,
    ToolResultEvent,
    TurnEnd,
    TurnEndData,
    TurnEndReason,
    encode_data,
)
from ._fold import LogFold
from ._rules import LogState, OpenToolCall
from .store._base import Lease
from .store._protocol import SessionStoreProtocol

__all__ = ["NOT_STARTED_TEXT", "OUTCOME_UNKNOWN_TEXT", "closers", "load_state", "resume"]

OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is "
    "unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or "
    "idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly."
)
NOT_STARTED_TEXT = (
    "The tool call was interrupted before it was dispatched, so it did not run and had no effect. "
    "Call the tool again if it is still needed."
)


def _result(call: OpenToolCall, seq: int) -> ToolResultEvent:
    unknown = call.call_seq is not None
    text = OUTCOME_UNKNOWN_TEXT if unknown else NOT_STARTED_TEXT
    call_id = CallId(call.call_id)
    message = UserMessage(
        id=MessageId(f"interrupted-tool-result-{call.call_id}-{seq}"),
        source=ToolSource(call_id),
        content=(ToolResultBlock(tool_call_id=call_id, is_error=True, content=(TextBlock(text),)),),
    )
    error = (
        ToolResultError(name="ToolOutcomeUnknownError", code="TOOL_OUTCOME_UNKNOWN")
        if unknown
        else ToolResultError(name="ToolNotStartedError", code="TOOL_NOT_STARTED")
    )
    return ToolResultEvent(
        data=ToolResultData(turn=call.turn, step=call.step, message=message, error=error),
        surface_op="append",
        source_event_seqs=(call.call_seq,) if call.call_seq is not None else None,
    )


def _as_the_original_writes(event: Event) -> str | None:
    """A synthetic tool result's data in the key order the original writes it (`id` before `role`, `isError`
    before `content`), so a repaired log is byte-identical to the original's; None: encode as usual."""
    if not isinstance(event, ToolResultEvent):
        return None
    data = event.data
    blocks = [
        {
            "type": "tool-result",
            "toolCallId": block.tool_call_id,
            "isError": block.is_error,
            "content": [
                {"type": "text", "text": part.text} for part in block.content if isinstance(part, TextBlock)
            ],
        }
        for block in data.message.content
        if isinstance(block, ToolResultBlock)
    ]
    source = data.message.source
    call_id = source.call_id if isinstance(source, ToolSource) else ""
    message = {
        "id": data.message.id,
        "role": "user",
        "source": {"kind": "tool", "callId": call_id},
        "content": blocks,
    }
    written: dict[str, object] = {"turn": data.turn, "step": data.step, "message": message}
    if data.error is not None:
        written["error"] = {"name": data.error.name, "code": data.error.code}
    return encode_data(written)


def closers(state: LogState) -> list[Event]:
    """The events that close the log's open last turn (none if the last turn is closed)."""
    if state.open_turn is None:
        return []
    events: list[Event] = []
    seq = state.next_seq
    for call in state.open_tool_calls():
        events.append(_result(call, seq))
        seq += 1
    if state.open_step is not None:
        turn, step = state.open_step
        events.append(StepEnd(data=StepData(turn=turn, step=step)))
    events.append(TurnEnd(data=TurnEndData(turn=state.open_turn, reason=TurnEndReason(kind="interrupted"))))
    return events


def load_state(store: SessionStoreProtocol, session_id: str, *, folds: Sequence[LogFold] = ()) -> LogState:
    """The rule state of a stored log, its `folds` fed along; read without its chunks (they change no state that
    repair needs) unless a fold wants them."""
    state = LogState(folds=folds)
    skip = () if state.wants(AssistantChunk) else (AssistantChunk,)
    for event in store.events(session_id, skip_types=skip):
        state.feed(event, check_seq=False)
    last = store.last_event(session_id)
    if last is not None:
        state.next_seq, state.last_type, state.last_time = last.seq + 1, last.type, last.time
    return state


def resume(
    store: SessionStoreProtocol,
    session_id: str,
    *,
    lease: Lease | None = None,
    folds: Sequence[LogFold] = (),
) -> tuple[LogState, list[StoredEvent]]:
    """Repair the log if its last turn is open, then append `session/end-seed` unless the log already ends with one.
    The appended events take the last event's time. Returns the state after them and the events appended; `folds`
    are fed the stored events and the appended ones.

    Repair runs only with the session's lease: the caller's (`open_log` passes its own), or one taken for the
    repair and given back after it (`SessionInUseError` while another process holds it)."""
    if lease is None:
        taken = store.acquire_lease(session_id)
        try:
            return resume(store, session_id, lease=taken, folds=folds)
        finally:
            store.release_lease(taken)
    state = load_state(store, session_id, folds=folds)
    pending = closers(state)
    if state.last_type != SessionEndSeed.TAG or pending:
        pending.append(SessionEndSeed(data=EmptyData()))
    appended: list[StoredEvent] = []
    time = state.last_time
    for event in pending:
        stored = StoredEvent.from_event(
            event, seq=state.next_seq, time=time, data=_as_the_original_writes(event)
        )
        state.feed(stored)
        appended.append(stored)
    if appended:
        store.append_events(session_id, appended, lease=lease)
    return state, appended
