"""The clock and id minter, per session: the deterministic ones give every session a sequence of its own, so two
sessions appending at once get the same times and ids whichever order they run in; the wall clock and random
ids are one for all."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from dsh.runtime.session import (
    CountingIds,
    FixedClock,
    SessionStore,
    SystemClock,
    TurnEnd,
    TurnEndData,
    TurnEndReason,
    TurnStart,
    TurnStartData,
    UuidIds,
    open_log,
)

pytestmark = pytest.mark.anyio


def test_the_shared_services_are_one_for_every_session() -> None:
    clock, ids = SystemClock(), UuidIds()
    assert clock.for_session("a", after=5) is clock
    assert ids.for_session("a", start=3) is ids


def test_a_fixed_clock_gives_each_session_its_own_sequence_after_its_latest_time() -> None:
    clock = FixedClock(100, 1)
    a, b = clock.for_session("a", after=200), clock.for_session("b", after=300)
    assert [a.now_ms(), b.now_ms(), a.now_ms(), b.now_ms()] == [201, 301, 202, 302]
    assert clock.for_session("a", after=0) is a, "asked again, a session's clock goes on"
    assert clock.now_ms() == 100, "the top-level sequence is untouched"


def test_counting_ids_count_within_each_session_and_name_children_after_their_parent() -> None:
    ids = CountingIds("s")
    root = ids.new_session_id()
    scoped = ids.for_session(root, start=0)
    assert [scoped.new_id("message"), scoped.new_id("message"), scoped.new_id("retry")] == [
        "message-1",
        "message-2",
        "retry-1",
    ]
    assert [scoped.new_session_id(), scoped.new_session_id()] == ["s-1.1", "s-1.2"]
    fork = ids.for_session("s-1.2", start=40)
    assert fork.new_id("message") == "message-41", "a fork child counts on from its seed"
    assert fork.new_session_id() == "s-1.2.1"
    assert ids.new_session_id() == "s-2"


async def _run(store: SessionStore, parent: str, lead: int) -> dict[str, list[int]]:
    """Two children of `parent` append three turns each at once; child `lead` runs ahead, the other lags."""
    children = [store.create(parent_id=parent).id for _ in range(2)]
    times: dict[str, list[int]] = {child: [] for child in children}

    async def append(child: str, delay: float) -> None:
        async with open_log(store, child, repair=False) as log:
            for turn in range(1, 4):
                await anyio.sleep(delay)
                times[child].append(log.append(TurnStart(data=TurnStartData(turn=turn))).time)
                log.append(TurnEnd(data=TurnEndData(turn=turn, reason=TurnEndReason(kind="completed"))))

    async with anyio.create_task_group() as group:
        for index, child in enumerate(children):
            group.start_soon(append, child, 0.0 if index == lead else 0.005)
    return times


async def test_concurrent_sessions_get_the_same_times_whichever_runs_ahead(tmp_path: Path) -> None:
    runs = []
    for lead in (0, 1):
        with SessionStore(tmp_path / f"{lead}.db", clock=FixedClock(1_000, 1), ids=CountingIds()) as store:
            parent = store.create().id
            runs.append(await _run(store, parent, lead))
    assert runs[0] == runs[1]
    assert runs[0] == {"session-1.1": [1002, 1004, 1006], "session-1.2": [1003, 1005, 1007]}
