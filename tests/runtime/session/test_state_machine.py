"""A Hypothesis state machine over the store: appends, forks, flushes and reopens against an in-memory model."""

from __future__ import annotations

import shutil
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

from runtime.session import (
    CountingIds,
    FixedClock,
    OpenTurnError,
    SessionLog,
    SessionStore,
    StoredEvent,
    open_log,
    project,
    resume,
)
from tests.strategies import TurnSpec, turn_events, turn_specs

MAX_SESSIONS = 4


class StoreMachine(RuleBasedStateMachine):
    """The model: each session's full log (what `append` returned, inherited prefix included) and how much of it
    is durable. The store must always hold a prefix of every log that covers at least its durable part."""

    sessions = Bundle("sessions")

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="dsh-machine-"))
        self.clock = FixedClock(0, step=1)
        self.ids = CountingIds("m")
        self.portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal()
        self.portal = self.portal_cm.__enter__()
        self.store = self._open_store()
        self.model: dict[str, list[StoredEvent]] = {}
        self.turns: dict[str, int] = {}
        self.logs: dict[str, tuple[AbstractContextManager[SessionLog], SessionLog]] = {}

    def _open_store(self) -> SessionStore:
        return SessionStore(self.dir / "s.db", clock=self.clock, ids=self.ids, synchronous="OFF")

    def _log(self, session: str) -> SessionLog:
        if session not in self.logs:
            manager = self.portal.wrap_async_context_manager(open_log(self.store, session, repair=False))
            self.logs[session] = (manager, manager.__enter__())
        return self.logs[session][1]

    def _close_logs(self) -> None:
        for manager, _ in self.logs.values():
            manager.__exit__(None, None, None)
        self.logs.clear()

    def _durable(self, session: str) -> int:
        return self.logs[session][1].durable_seq if session in self.logs else len(self.model[session])

    @precondition(lambda self: len(self.model) < MAX_SESSIONS)
    @rule(target=sessions)
    def create(self) -> str:
        info = self.store.create(cwd="/w")
        self.model[info.id], self.turns[info.id] = [], 0
        return info.id

    @rule(session=sessions, spec=turn_specs)
    def append_turn(self, session: str, spec: TurnSpec) -> None:
        log = self._log(session)
        if log.state.open_turn is not None:
            return  # the model's loop never opens a turn inside another
        self.turns[session] = max(self.turns[session], log.state.last_turn) + 1
        for one in turn_events(self.turns[session], log.next_seq, spec):
            self.model[session].append(self.portal.call(log.append, one))

    @rule(session=sessions)
    def flush(self, session: str) -> None:
        if session in self.logs:
            self.portal.call(self.logs[session][1].flush)
        assert self._durable(session) == len(self.model[session])

    @rule(target=sessions, session=sessions, fraction=st.floats(0, 1), at_turn_end=st.booleans())
    def fork(self, session: str, fraction: float, at_turn_end: bool) -> str:
        self.flush(session)
        log = self.model[session]
        if not log or len(self.model) >= MAX_SESSIONS:
            return session
        at = min(int(fraction * len(log)), len(log) - 1)
        ends = [e.seq for e in log if e.type == "turn/end"]
        if at_turn_end and ends:  # half the forks cut where the loop would: at a turn/end
            at = ends[min(int(fraction * len(ends)), len(ends) - 1)]
        bounds = [e for e in log[: at + 1] if e.type in ("turn/start", "turn/end")]
        if bounds and bounds[-1].type == "turn/start":
            event("fork refused: open turn")
            with pytest.raises(OpenTurnError) as refused:
                self.store.fork(session, at=at)
            assert refused.value.turn_start_seq == bounds[-1].seq
            return session
        child = self.store.fork(session, at=at)
        event("fork accepted")
        self.model[child.id] = log[: at + 1]
        self.turns[child.id] = self.turns[session]
        assert project(self.store.events(child.id)) == project(self.store.events(session, stop=at + 1))
        return child.id

    @rule(session=sessions)
    def resume(self, session: str) -> None:
        if session in self.logs:
            manager, _ = self.logs.pop(session)
            manager.__exit__(None, None, None)
        state, appended = resume(self.store, session)
        event("resume repaired an open turn" if len(appended) > 1 else "resume on a closed turn")
        assert state.open_turn is None
        assert [e.seq for e in appended] == list(range(len(self.model[session]), state.next_seq))
        self.model[session].extend(appended)

    @rule()
    def reopen(self) -> None:
        event("reopen")
        self._close_logs()  # leaving a log flushes it
        self.store.close()
        self.store = self._open_store()

    @invariant()
    def store_agrees_with_model(self) -> None:
        for session, events in self.model.items():
            durable = self._durable(session)  # read first: the writer may commit more while we read the store
            stored = list(self.store.events(session))
            assert [e.seq for e in stored] == list(range(len(stored)))
            # the writer commits in the background: at least everything flushed, never anything not appended
            assert durable <= len(stored) <= len(events)
            assert stored == events[: len(stored)]

    def teardown(self) -> None:
        try:
            self._close_logs()
            self.store.close()
        finally:
            self.portal_cm.__exit__(None, None, None)
            shutil.rmtree(self.dir, ignore_errors=True)


StoreMachine.TestCase.settings = settings(StoreMachine.TestCase.settings, stateful_step_count=30)
TestStoreMachine = StoreMachine.TestCase
