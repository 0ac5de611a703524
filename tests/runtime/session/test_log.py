"""Group-committed appends: `append` assigns seqs at once, `flush` is the durability barrier, rules are checked."""

from __future__ import annotations

import anyio
import pytest

from dsh.runtime.llm import TextDelta
from dsh.runtime.session import (
    AssistantChunk,
    AssistantChunkData,
    LogRuleError,
    Replace,
    SessionBusyError,
    SessionStoreProtocol,
    StoredEvent,
    TurnStart,
    TurnStartData,
    UserMessageEvent,
    open_log,
)
from tests.strategies import TurnSpec, turn_events

from .backends import INTEGRITY_ERRORS


@pytest.mark.anyio
async def test_append_assigns_seqs_and_flush_makes_them_durable(store: SessionStoreProtocol) -> None:
    session = store.create(cwd="/w")
    async with open_log(store, session.id, repair=False) as log:
        appended = [
            log.append(event) for event in turn_events(1, 0, TurnSpec("hi", ("a", "b"), (("bash", "ok"),)))
        ]
        assert [e.seq for e in appended] == list(range(len(appended)))
        assert [e.time for e in appended] == sorted(e.time for e in appended)
        await log.flush()
        assert log.durable_seq == len(appended)
        assert list(store.events(session.id)) == appended
        more = log.append(TurnStart(data=TurnStartData(turn=2)))
    assert list(store.events(session.id)) == [*appended, more]  # leaving the block flushes


@pytest.mark.anyio
async def test_appends_from_many_tasks_commit_in_groups(store: SessionStoreProtocol) -> None:
    session = store.create()
    async with open_log(store, session.id, repair=False) as log:
        log.append(TurnStart(data=TurnStartData(turn=1)))
        for i in range(500):
            log.append(
                AssistantChunk(data=AssistantChunkData(turn=1, step=1, chunk=TextDelta(index=0, text=str(i))))
            )
            if i % 97 == 0:
                await log.flush()
        await log.flush()
    events = list(store.events(session.id))
    assert [e.seq for e in events] == list(range(501))


@pytest.mark.anyio
async def test_a_broken_rule_is_refused_on_append_and_changes_nothing(store: SessionStoreProtocol) -> None:
    session = store.create()
    spec = TurnSpec("hi", (), ())
    async with open_log(store, session.id, repair=False) as log:
        good = [log.append(e) for e in turn_events(1, 0, spec)]
        prompt = turn_events(2, len(good), spec)[2]
        assert isinstance(prompt, UserMessageEvent)
        with pytest.raises(LogRuleError) as bad:
            log.append(
                UserMessageEvent(
                    data=prompt.data, surface_op=Replace(start=99, end=99), source_event_seqs=(0,)
                )
            )
        assert bad.value.rule == "surface.replace-range"
        with pytest.raises(LogRuleError):
            log.append(UserMessageEvent(data=prompt.data))  # a surface type must carry surfaceOp
        assert log.next_seq == len(good)
    assert list(store.events(session.id)) == good


@pytest.mark.anyio
async def test_reopening_continues_the_log(store: SessionStoreProtocol) -> None:
    session = store.create()
    spec = TurnSpec("hi", ("x",), ())
    async with open_log(store, session.id, repair=False) as log:
        first = [log.append(e) for e in turn_events(1, 0, spec)]
    async with open_log(store, session.id) as log:
        assert log.next_seq == len(first) + 1  # the seed end marker
        assert log.state.last_turn == 1
        second = [log.append(e) for e in turn_events(2, log.next_seq, spec)]
    events = list(store.events(session.id))
    assert events[len(first)].type == "session/end-seed"
    assert events[-len(second) :] == second


@pytest.mark.anyio
async def test_one_writer_per_session_and_a_failed_commit_is_loud(store: SessionStoreProtocol) -> None:
    session = store.create()
    async with open_log(store, session.id, repair=False) as log:
        with pytest.raises(SessionBusyError):
            async with open_log(store, session.id):
                pass
        log.append(TurnStart(data=TurnStartData(turn=1)))
        await log.flush()

    # another process wrote seq 1 behind this writer's back: the commit fails and the error reaches the caller
    async def conflict() -> None:
        async with open_log(store, session.id, repair=False) as log:
            store.append_events(session.id, [StoredEvent(type="x/y", seq=1, time=0, data="{}")])
            log.append(TurnStart(data=TurnStartData(turn=2)))
            await log.flush()

    with pytest.raises(INTEGRITY_ERRORS):
        await conflict()
    assert [e.type for e in store.events(session.id)] == ["turn/start", "x/y"]


@pytest.mark.anyio
async def test_leaving_the_block_by_an_exception_still_commits_what_was_appended(
    store: SessionStoreProtocol,
) -> None:
    session = store.create()

    async def failing_turn() -> None:
        async with open_log(store, session.id, repair=False) as log:
            for event in turn_events(1, 0, TurnSpec("hi", ("a",), ())):
                log.append(event)
            raise KeyError("the loop failed")

    with pytest.raises(KeyError, match="the loop failed"):
        await failing_turn()
    assert [e.type for e in store.events(session.id)][-1] == "turn/end"


@pytest.mark.anyio
async def test_a_shielded_flush_after_the_writer_was_cancelled_commits_inline(
    store: SessionStoreProtocol,
) -> None:
    """A log opened inside a scope that gets cancelled (a subagent's, when its parent is cancelled) loses its
    writer task with the caller; the caller's shielded closing appends must still become durable, not hang."""
    session = store.create()
    opened = anyio.Event()
    appended: list[StoredEvent] = []

    async def run() -> None:
        async with open_log(store, session.id, repair=False) as log:
            log.append(TurnStart(data=TurnStartData(turn=1)))
            opened.set()
            try:
                await anyio.sleep_forever()
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.lowlevel.checkpoint()  # the writer task has seen the cancellation by now
                    appended.append(log.append(TurnStart(data=TurnStartData(turn=2))))
                    with anyio.fail_after(5):
                        await log.flush()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await opened.wait()
        group.cancel_scope.cancel()
    assert [e.seq for e in store.events(session.id)] == [0, 1]
