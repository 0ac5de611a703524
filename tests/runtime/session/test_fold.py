"""The `LogFold` seam: a fold is fed, in seq order, the stored events of the types it wants as the log opens (the
repair's included) and every one appended afterwards; a fold that refuses an event leaves the log, the rules' state
and every fold as they were; the chunk path never reaches a fold that does not want chunks."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from dsh.runtime.session import (
    AssistantChunk,
    Event,
    LogFold,
    LogRuleError,
    LogState,
    SessionEndSeed,
    SessionStoreProtocol,
    StoredEvent,
    TurnEnd,
    TurnEndData,
    TurnEndReason,
    TurnStart,
    TurnStartData,
    load_state,
    open_log,
)
from tests.strategies import TurnSpec, turn_events

_COMPLETED = TurnEndReason(kind="completed")


class Recorder:
    """A fold that keeps (seq, type, typed data) of every event it is fed, and refuses the turns in `refuse`."""

    def __init__(self, *types: type[Event], refuse: Collection[int] = ()) -> None:
        self.types = types
        self.refuse = set(refuse)
        self.fed: list[tuple[int, str, object]] = []
        self.checked: list[int] = []

    def check(self, event: StoredEvent, data: object) -> None:
        self.checked.append(event.seq)
        if isinstance(data, TurnStartData) and data.turn in self.refuse:
            raise LogRuleError(f"turn {data.turn} is refused", rule="test.refuse", seq=event.seq)

    def feed(self, event: StoredEvent, data: object) -> None:
        self.fed.append((event.seq, event.type, data))


def _fold(recorder: Recorder) -> LogFold:
    return recorder  # the recorder is a LogFold (checked by mypy here)


@pytest.mark.anyio
async def test_a_fold_is_fed_the_stored_events_on_open_then_every_append(store: SessionStoreProtocol) -> None:
    session = store.create()
    spec = TurnSpec("hi", ("a", "b"), ())
    async with open_log(store, session.id, repair=False) as log:
        first = [log.append(e) for e in turn_events(1, 0, spec)]
    turns = Recorder(TurnStart, TurnEnd, SessionEndSeed)
    async with open_log(store, session.id, folds=(_fold(turns),)) as log:
        on_open = list(turns.fed)
        later = log.append(TurnStart(data=TurnStartData(turn=2)))
        log.append(TurnEnd(data=TurnEndData(turn=2, reason=_COMPLETED)))
    stored = {e.seq: e for e in store.events(session.id)}
    wanted = [e for e in first if e.type in (TurnStart.TAG, TurnEnd.TAG)]
    assert [(seq, kind) for seq, kind, _ in on_open] == [
        *((e.seq, e.type) for e in wanted),
        (len(first), SessionEndSeed.TAG),  # the repair's own event reaches the fold too
    ]
    assert [seq for seq, _, _ in turns.fed] == sorted(seq for seq, _, _ in turns.fed)
    assert turns.fed[-2:] == [
        (later.seq, TurnStart.TAG, TurnStartData(turn=2)),
        (later.seq + 1, TurnEnd.TAG, stored[later.seq + 1].view().data),
    ]
    # the typed data handed over equals what a reader decodes from the stored text
    assert all(data == stored[seq].view().data for seq, kind, data in on_open if kind != SessionEndSeed.TAG)


@pytest.mark.anyio
async def test_a_refused_event_changes_neither_the_log_nor_the_rules_nor_any_fold(
    store: SessionStoreProtocol,
) -> None:
    session = store.create()
    accepting = Recorder(TurnStart, TurnEnd)
    refusing = Recorder(TurnStart, refuse={2})
    async with open_log(store, session.id, repair=False, folds=(_fold(accepting), _fold(refusing))) as log:
        good = [log.append(e) for e in turn_events(1, 0, TurnSpec("hi", ("x",), ()))]
        before = (
            list(accepting.fed),
            list(refusing.fed),
            log.next_seq,
            log.state.last_turn,
            log.state.open_turn,
        )
        with pytest.raises(LogRuleError) as refused:
            log.append(TurnStart(data=TurnStartData(turn=2)))
        assert (refused.value.rule, refused.value.seq) == ("test.refuse", len(good))
        after = (
            list(accepting.fed),
            list(refusing.fed),
            log.next_seq,
            log.state.last_turn,
            log.state.open_turn,
        )
        assert after == before
        assert accepting.checked[-1] == len(good), "every fold checks before any is fed"
        log.append(TurnStart(data=TurnStartData(turn=3)))  # the log goes on from where it was
    events = list(store.events(session.id))
    assert events[: len(good)] == good
    assert [e.seq for e in events] == list(range(len(good) + 1))


def test_a_fold_that_refuses_a_stored_event_fails_the_open(store: SessionStoreProtocol) -> None:
    session = store.create()
    store.append_events(
        session.id,
        [
            StoredEvent.from_event(TurnStart(data=TurnStartData(turn=1)), seq=0, time=1),
            StoredEvent.from_event(TurnEnd(data=TurnEndData(turn=1, reason=_COMPLETED)), seq=1, time=2),
        ],
    )
    with pytest.raises(LogRuleError) as refused:
        load_state(store, session.id, folds=(Recorder(TurnStart, refuse={1}),))
    assert refused.value.seq == 0


def test_the_chunk_path_reaches_only_the_folds_that_want_chunks(store: SessionStoreProtocol) -> None:
    events = [
        StoredEvent.from_event(e, seq=seq, time=1)
        for seq, e in enumerate(turn_events(1, 0, TurnSpec("hi", ("a", "b", "c"), ())))
    ]
    chunks = [e.seq for e in events if e.type == AssistantChunk.TAG]
    others = Recorder(TurnStart)
    streamed = Recorder(AssistantChunk)
    state = LogState(folds=(others, streamed))
    for event in events:
        state.feed(event)
    assert [seq for seq, _, _ in others.fed] == [0]
    assert others.checked == [0]
    assert [seq for seq, _, _ in streamed.fed] == chunks
    assert state.wants(AssistantChunk)
    assert not LogState(folds=(others,)).wants(AssistantChunk)
    # reading a log back skips its chunks unless a fold wants them
    session = store.create()
    store.append_events(session.id, events)
    reread = Recorder(AssistantChunk)
    load_state(store, session.id, folds=(reread,))
    assert [seq for seq, _, _ in reread.fed] == chunks
