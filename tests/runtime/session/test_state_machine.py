"""A Hypothesis state machine over the store, on each backend: appends, forks, flushes, reopens and a second writer
against an in-memory model."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from runtime.session import (
    CountingIds,
    FixedClock,
    OpenTurnError,
    SessionInUseError,
    SessionLog,
    SessionStore,
    SessionStoreProtocol,
    StoredEvent,
    open_log,
    open_store,
    project,
    resume,
)
from tests.pg_server import PgServer
from tests.strategies import TurnSpec, turn_events, turn_specs

from .backends import BACKENDS

MAX_SESSIONS = 4


class StoreMachine(RuleBasedStateMachine):
    """The model: each session's full log (what `append` returned, inherited prefix included) and how much of it
    is durable. The store must always hold a prefix of every log that covers at least its durable part."""

    sessions = Bundle("sessions")
    # where each run's store lives: a fresh SQLite file, or a fresh schema of the test session's server (set by the
    # test before the machine runs); `second_writer` is checked only where the backend arbitrates leases
    location: Callable[[Path], str] = staticmethod(lambda directory: str(directory / "s.db"))
    leases = True

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="dsh-machine-"))
        self.spec = self.location(self.dir)
        self.clock = FixedClock(0, step=1)
        self.ids = CountingIds("m")
        self.portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal()
        self.portal = self.portal_cm.__enter__()
        self.store = self._open_store()
        self.model: dict[str, list[StoredEvent]] = {}
        self.turns: dict[str, int] = {}
        self.logs: dict[str, tuple[AbstractContextManager[SessionLog], SessionLog]] = {}

    def _open_store(self) -> SessionStoreProtocol:
        if self.spec.endswith(".db"):
            return SessionStore(self.spec, clock=self.clock, ids=self.ids, synchronous="OFF")
        return open_store(self.spec, clock=self.clock, ids=self.ids)

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

    @precondition(lambda self: self.leases and bool(self.logs))
    @rule(data=st.data())
    def second_writer(self, data: st.DataObject) -> None:
        """Another client of the same store (another process, another host) is refused the session's lease while
        this writer holds it, and nothing it tried is stored."""
        session = data.draw(st.sampled_from(sorted(self.logs)))
        with self._open_store() as other, pytest.raises(SessionInUseError) as refused:
            self.portal.wrap_async_context_manager(open_log(other, session)).__enter__()
        assert refused.value.session_id == session
        event("second writer refused")

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


@pytest.mark.parametrize("backend", BACKENDS)
def test_store_machine(backend: str, request: pytest.FixtureRequest) -> None:
    class Machine(StoreMachine):
        pass

    chosen = settings(settings(), stateful_step_count=30)
    if backend == "postgresql":
        server: PgServer = request.getfixturevalue("pg_server")
        Machine.location = staticmethod(lambda _directory: server.new_schema())
        # every step is a few round trips to a server: fewer runs keep the suite quick, while each one still walks
        # the backend through every rule (the rules themselves are the SQLite run's too)
        chosen = settings(chosen, max_examples=min(chosen.max_examples, 50))
    else:
        Machine.leases = False  # the SQLite lease arrives with the hardened SQLite store
    run_state_machine_as_test(Machine, settings=chosen)
