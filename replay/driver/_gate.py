"""`RecordedInbox`, the re-run's inbox gate: it admits each live input at the position its recording has it
(`Delivery`, from `replay/script/_inbox.py`) and holds each agent at a boundary until the input due before it has
arrived. A background child's report therefore lands in the parent's log exactly where the recording has it, however
the scheduler interleaves the two agents."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from dsh.runtime.agent import AGENTS, Agent, InputSource, QueueTarget, Splice
from dsh.runtime.jobs import JOBS
from dsh.runtime.llm import source_kind
from dsh.runtime.session import (
    Event,
    TurnEnd,
)

from ..recordings._errors import ReplayMismatch
from ..script._inbox import Delivery, Position, Positions, job_of, sender_of

__all__ = ["BoundLog", "RecordedInbox"]

BoundLog = Callable[[str], str | None]
"""Live session id -> the name of the recorded log it is bound to (None: none)."""

_WAIT_S = 60.0
"""The most a held agent waits for input its recording says is due while something live (a busy agent, a running
job) could still send it, before the re-run fails naming it. With nothing live it fails at once."""

_RECHECK_S = 1.0
"""How often a held agent looks again at what is live (an agent going idle or a job ending may not notify it)."""

_SETTLE_S = 5.0
"""The most a held agent waits for the other tasks to block (a sender already started gets to queue its input)."""


class _Signal:
    """Wakes every waiter of one gate when anything changes: an input taken or spliced, an agent past a boundary."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = anyio.Event()

    def notify(self) -> None:
        event, self._event = self._event, anyio.Event()
        event.set()

    async def wait(self, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            await self._event.wait()


@dataclass
class _Slot:
    delivery: Delivery
    taken: bool = False
    spliced: bool = False
    splice: Splice | None = None
    splicing: bool = False

    async def enter(self, session: _Session) -> None:
        """Splice the input (once, whoever gets here first: its sender, or the agent at a boundary)."""
        if self.splicing:
            return
        self.splicing = True
        assert self.splice is not None, "a slot is entered only once its sender has arrived"
        await self.splice()
        self.spliced = True
        session.notify()


@dataclass
class _Session:
    """One recorded log's deliveries, and where the live agent bound to it is."""

    name: str
    slots: list[_Slot]
    signal: _Signal
    agent: Agent | None = None
    positions: Positions = field(default_factory=Positions)

    def notify(self) -> None:
        self.signal.notify()

    def due(self) -> list[_Slot]:
        return [s for s in self.slots if not s.spliced and s.delivery.position == self.positions.current]


def _idle(position: Position) -> bool:
    """Whether an agent at `position` is between turns (before its first, or after a `turn/end`)."""
    return position is None or position[0] == TurnEnd.TAG


def _before(position: Position, live: Position) -> bool:
    """Whether a recorded input at `position` entered before a reopened log's `live` position (after its turn N):
    the inputs of turns up to N, which the reopened log already holds."""
    if position is None:
        return live is not None
    if live is None:
        return False
    tag, turn, _ = position
    return turn < live[1] or (turn == live[1] and tag != TurnEnd.TAG)


def _live_position(agent: Agent) -> Position:
    """Where a live agent's log is when the gate first sees it: a new log is before any boundary; a reopened one
    is after its last turn (resume closed any open turn)."""
    state = agent.log.state
    if state.open_turn is not None or state.last_turn == 0:
        return None
    return (TurnEnd.TAG, state.last_turn, 0)


class RecordedInbox:
    """The replay's inbox gate (dsh.runtime.agent's `InboxGate`). `logs`: each recorded log's name, id and deliveries;
    `bound`: live session id -> the recorded log's name (the replay adapter's binding), None when unbound."""

    def __init__(self, logs: list[tuple[str, str, tuple[Delivery, ...]]], bound: BoundLog) -> None:
        self._signal = _Signal()
        self._sessions = {
            name: _Session(name, [_Slot(d) for d in deliveries], self._signal) for name, _, deliveries in logs
        }
        self._held: set[str] = (
            set()
        )  # live session ids waiting in this gate (they send nothing new meanwhile)
        self._ids = {log_id: name for name, log_id, _ in logs}
        self._bound = bound
        self._problems: list[ReplayMismatch] = []

    def assert_consumed(self) -> None:
        """Raise the first input the recording does not have (admitted when it was queued, as live), else one for
        a recorded input that no live sender delivered."""
        if self._problems:
            raise self._problems[0]
        for session in self._sessions.values():
            missing = [s.delivery for s in session.slots if not s.spliced]
            if missing:
                listed = "; ".join(f"{d.target} {d.kind} at {d.position}" for d in missing)
                raise ReplayMismatch(
                    f"replay mismatch: {session.name} records input the re-run never queued: {listed}",
                    session_id=None if session.agent is None else session.agent.id,
                    log=session.name,
                    call=None,
                    recorded=listed,
                    asked="nothing",
                )

    def _session(self, agent: Agent) -> _Session | None:
        name = self._bound(agent.id)
        session = None if name is None else self._sessions.get(name)
        if session is None or not session.slots:
            return None
        if session.agent is not agent:  # first seen, or reopened (resume): start from its log
            session.agent = agent
            session.positions = Positions(_live_position(agent))
            for slot in session.slots:
                # a reopened log already holds the input of its turns (whether this gate spliced it, or the
                # session was recorded, or replayed, by an earlier command): its next input is the next turn's
                if not slot.taken and _before(slot.delivery.position, session.positions.current):
                    slot.taken = slot.spliced = True
        return session

    def _senders(self, agent: Agent) -> list[str]:
        """What live could still queue input: every agent other than `agent` with a turn running and not itself held
        in this gate, and every running background job."""
        live: list[str] = []
        agents = agent.ctx.get(AGENTS).live() if agent.ctx.has(AGENTS) else [agent]
        for other in agents:
            if other is not agent and other.busy and other.id not in self._held:
                live.append(f"session {other.id} (a turn running)")
        if agent.ctx.has(JOBS):
            live.extend(
                f"job {job.id} ({job.tool}) of session {owner}"
                for owner, job in agent.ctx.get(JOBS).running()
            )
        return live

    def _sender_log(self, sender: str | None) -> str | None:
        return None if sender is None else self._bound(sender)

    async def deliver(
        self,
        agent: Agent,
        target: QueueTarget,
        source: InputSource,
        splice: Splice,
        *,
        inline: bool = False,
    ) -> None:
        session = self._session(agent)
        if session is None:
            await splice()
            return
        kind, sender_log, job = source_kind(source), self._sender_log(sender_of(source)), job_of(source)
        slot = next(
            (
                s
                for s in session.slots
                if not s.taken
                # `next` is decided at admission: at the recorded position, as the recording decided it
                and (target == "next" or s.delivery.target == target)
                and s.delivery.kind == kind
                # a recorded sender pairs with the live session bound to its log; an input the recording does not
                # say the sender of (a message a parent sent its child) pairs with whoever sends it, in order
                and (s.delivery.sender is None or self._ids.get(s.delivery.sender) == sender_log)
                # a job's notice pairs with the recorded notice of the same job (ids are numbered in the log, so a
                # re-run's are the recording's), however the jobs' settlements were scheduled
                and (s.delivery.key is None or s.delivery.key == job)
            ),
            None,
        )
        if slot is None:
            recorded = [
                f"{s.delivery.target} {s.delivery.kind} at {s.delivery.position}" for s in session.slots
            ]
            problem = ReplayMismatch(
                f"replay mismatch: {session.name} records no more {target} input from a {kind} source"
                f"{'' if sender_log is None else f' sent by {sender_log}'}; recorded inputs: {recorded}",
                session_id=agent.id,
                log=session.name,
                call=None,
                recorded="; ".join(recorded),
                asked=f"{target} input from {kind}",
            )
            # not raised here: the input enters as it would live, and what it leads to meets the recording's end
            # (the replay adapter names the call with no recorded entry); a re-run reports it as its mismatch
            self._problems.append(problem)
            await splice()
            return
        slot.taken = True
        slot.splice = splice
        index = session.slots.index(slot)
        if inline:
            # the agent's own turn queued it (a hook's context, workspace instructions as its step ends): its loop
            # cannot also wait at a boundary for it, so it enters now, after the input recorded before it here whose
            # sender has already queued it, where the recording must have it
            for earlier in session.slots[:index]:
                if (
                    earlier.taken
                    and not earlier.spliced
                    and earlier.delivery.position == session.positions.current
                ):
                    await earlier.enter(session)
            if slot.delivery.position != session.positions.current:
                self._problems.append(
                    ReplayMismatch(
                        f"replay mismatch: {session.name} records its {kind} input at {slot.delivery.position}, "
                        f"and the re-run queued it at {session.positions.current}",
                        session_id=agent.id,
                        log=session.name,
                        call=None,
                        recorded=f"{slot.delivery.target} {kind} at {slot.delivery.position}",
                        asked=f"{target} {kind} at {session.positions.current}",
                    )
                )
            await slot.enter(session)
            return
        session.notify()  # an agent held at a boundary may be waiting for this input
        while not slot.spliced:
            if (
                _idle(session.positions.current)
                and session.positions.current == slot.delivery.position
                and all(s.spliced for s in session.slots[:index])
            ):
                # the agent is between turns: nothing of its own is logged until its next turn starts (which
                # waits for this input), so the input enters now, in recorded order
                await slot.enter(session)
                continue
            # waits without a bound, for a reason: the input enters when its receiver reaches the recorded position,
            # and a receiver held there waiting for earlier input fails (its wait is bounded), ending this one
            await self._signal.wait(_RECHECK_S)

    async def boundary(self, agent: Agent, event: Event) -> None:
        session = self._session(agent)
        if session is None:
            return
        why = f"no live sender delivered it in {_WAIT_S:g} s"
        with anyio.move_on_after(_WAIT_S) as waited:
            # inside a turn the input due here enters just before the agent leaves this position, in recorded
            # order (each as soon as its sender has queued it: a later sender may wait on an earlier one's entry),
            # so it lands at the same place in every re-run, however the senders were scheduled
            while due := session.due():
                if due[0].taken and not due[0].splicing:
                    await due[0].enter(session)
                elif due[0].taken or await self._may_come(agent, due[0]):
                    self._held.add(agent.id)
                    try:
                        await self._signal.wait(_RECHECK_S)
                    finally:
                        self._held.discard(agent.id)
                else:
                    why = (
                        "nothing live can send it (no other agent has a turn running, and no job is running)"
                    )
                    break
        if waited.cancelled_caught or session.due():
            missing = [f"{s.delivery.target} {s.delivery.kind}" for s in session.due()]
            problem = ReplayMismatch(
                f"replay mismatch: {session.name} records input {missing} before {event.__struct_config__.tag} at "
                f"{session.positions.current}, and {why}",
                session_id=agent.id,
                log=session.name,
                call=None,
                recorded=", ".join(missing),
                asked=str(event.__struct_config__.tag),
            )
            self._problems.append(problem)
            raise problem
        session.positions.current = session.positions.after(event)
        session.notify()

    async def _may_come(self, agent: Agent, slot: _Slot) -> bool:
        """Whether the input of `slot` may still be queued: something live could send it, or, once every other
        task has run as far as it can (a sender already started queues its input then), it was."""
        if self._senders(agent):
            return True
        self._held.add(agent.id)
        try:
            with anyio.move_on_after(_SETTLE_S):
                await anyio.wait_all_tasks_blocked()
        finally:
            self._held.discard(agent.id)
        return slot.taken or bool(self._senders(agent))
