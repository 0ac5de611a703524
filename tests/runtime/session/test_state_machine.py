"""A Hypothesis state machine over the store, on each backend: appends, forks, flushes and reopens against an
in-memory model, with a second writer (another store on the same file or database, as another process would open
it) that is refused while a log holds the session, writes its own turns while none does, and, on SQLite, takes over
an expired lease from a stalled writer."""

from __future__ import annotations

import os
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

from dsh.runtime.session import (
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
TTL_MS = (
    600_000  # long enough that no log renews its lease during a run: expiry happens only when a rule says so
)


class _Wall:
    """The wall clock leases read (ms); a rule moves it to expire every lease."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


class StoreMachine(RuleBasedStateMachine):
    """The model: each session's full log (what `append` returned, inherited prefix included) and how much of it
    is durable. The store must always hold a prefix of every log that covers at least its durable part."""

    sessions = Bundle("sessions")
    # where each run's store lives: a fresh SQLite file, or a fresh schema of the test session's server (set by the
    # test before the machine runs)
    location: Callable[[Path], str] = staticmethod(lambda directory: str(directory / "s.db"))
    # SQLite's lease expires when its holder stops renewing; PostgreSQL's is the holder's connection, which the
    # server ends with its holder, so there is no stalled writer's lease to take over there
    expiring_leases = True

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="dsh-machine-"))
        self.spec = self.location(self.dir)
        self.clock = FixedClock(0, step=1)
        self.ids = CountingIds("m")
        self.portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal()
        self.portal = self.portal_cm.__enter__()
        self.wall = _Wall()
        self.store = self._open_store()
        self.other = self._open_store()  # the second writer
        self.model: dict[str, list[StoredEvent]] = {}
        self.turns: dict[str, int] = {}
        self.logs: dict[str, tuple[AbstractContextManager[SessionLog], SessionLog]] = {}

    def _open_store(self) -> SessionStoreProtocol:
        if not self.spec.endswith(".db"):
            return open_store(self.spec, clock=self.clock, ids=self.ids)
        return SessionStore(
            self.spec,
            clock=self.clock,
            ids=self.ids,
            synchronous="OFF",
            lease_ttl_ms=TTL_MS,
            wall_ms=self.wall,
        )

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

    async def _other_turn(self, session: str, spec: TurnSpec) -> list[StoredEvent]:
        async with open_log(self.other, session, repair=False) as log:
            if log.state.open_turn is not None:
                return []  # a stalled writer's turn is still open: the next resume repairs it
            self.turns[session] = max(self.turns[session], log.state.last_turn) + 1
            return [log.append(one) for one in turn_events(self.turns[session], log.next_seq, spec)]

    @rule(session=sessions, spec=turn_specs)
    def second_writer(self, session: str, spec: TurnSpec) -> None:
        """The second writer asks for the session: refused while a log holds it, else it writes a turn."""
        if session in self.logs:
            with pytest.raises(SessionInUseError) as refused:
                self.portal.call(self._other_turn, session, spec)
            assert (refused.value.session_id, refused.value.pid) == (session, os.getpid())
            with pytest.raises(SessionInUseError):
                resume(self.other, session)
            event("second writer refused")
            return
        self.model[session].extend(self.portal.call(self._other_turn, session, spec))
        assert self.other.lease_holder(session) is None
        event("second writer wrote a turn")

    @precondition(lambda self: self.expiring_leases and bool(self.logs))
    @rule(data=st.data())
    def take_over_an_expired_lease(self, data: st.DataObject) -> None:
        """The writer of a log stalls past its lease; the second writer takes the session over. What the stalled
        writer had not committed by then is refused, never written after the takeover."""
        session = data.draw(st.sampled_from(sorted(self.logs)))
        manager, log = self.logs.pop(session)
        # durable before it stalls: how much a background commit got in first would otherwise depend on the
        # scheduler, and so would the model every later rule draws from (a late commit's refusal is
        # tests/runtime/session/test_one_writer.py's)
        self.portal.call(log.flush)
        durable = log.durable_seq
        self.wall.now += 2 * TTL_MS
        for _, other in self.logs.values():  # the writers that did not stall renew, as their keepers would
            assert other.lease is not None
            self.store.renew_lease(other.lease)
        lease = self.other.acquire_lease(session)
        try:
            refused: SessionInUseError | None = None
            try:
                manager.__exit__(None, None, None)  # closing flushes: refused if anything was still pending
            except SessionInUseError as error:
                refused = error
            event("stalled writer had committed everything" if refused is None else "stalled writer refused")
            assert refused is None or (refused.pid, refused.since) == (lease.pid, lease.in_use().since)
            stored = list(self.other.events(session))
            assert durable <= len(stored) <= len(self.model[session])
            assert stored == self.model[session][: len(stored)]
            self.model[session] = stored
        finally:
            self.other.release_lease(lease)

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
            self.other.close()
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
        Machine.expiring_leases = False
        # every step is a few round trips to a server: fewer runs keep the suite quick, while each one still walks
        # the backend through every rule (the rules themselves are the SQLite run's too)
        chosen = settings(chosen, max_examples=min(chosen.max_examples, 50))
    run_state_machine_as_test(Machine, settings=chosen)
