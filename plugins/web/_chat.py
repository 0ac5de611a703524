"""Chat from the browser (`dsh web --config DEPLOYMENT`, or `--replay LOG`): the agents the server opened, each held
open in the server's task group, and what a page may ask of them: start a session with a prompt, prompt an idle
session (resuming a stored one), steer a running turn, cancel it, fork a session at a turn that ended, and answer
what a running turn waits on (an approval, an `ask_user_question`). A turn runs in the background; the page follows
it through its live stream like any other writer's, and shows what waits for an answer."""

from __future__ import annotations

import logging
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from dsh.runtime.agent import AGENTS, Agent
from dsh.runtime.host import Host
from dsh.runtime.session import SessionInfo, TurnEnd
from dsh.runtime.tools import ASK, QUESTION, Answer, Approval, ApprovalRequest, Question, Questions

__all__ = ["OUTCOMES", "Chat", "ChatError", "Waiting"]

OUTCOMES = ("allowed-once", "allowed-always", "rejected")
"""The answers a page may give an approval."""

log = logging.getLogger("dsh.web")


class ChatError(Exception):
    """What a page asked cannot be done (`status`: the HTTP status to answer with); the message says why."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


class Waiting:
    """What a running turn waits on from a person: an approval of call `call_id` (`tool`, `reason`) or the
    `questions` of an `ask_user_question` call; `answer` is set, then `answered`, when a page answers it."""

    def __init__(
        self, call_id: str, *, tool: str, reason: str | None = None, questions: tuple[Question, ...] = ()
    ) -> None:
        self.call_id = call_id
        self.tool = tool
        self.reason = reason
        self.questions = questions
        self.answer: Approval | tuple[Answer, ...] | None = None
        self.answered = anyio.Event()


class _Open:
    """One session the server holds open: its agent, its running turn and what that turn waits on."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.turn: anyio.CancelScope | None = None
        self.closed = anyio.Event()
        self.waiting: dict[str, Waiting] = {}


class Chat:
    """The sessions a browser talks to, over `host` (a loaded deployment), held in `group`."""

    def __init__(self, host: Host, group: TaskGroup) -> None:
        self.host = host
        self.agents = host.ctx.get(AGENTS)
        self.group = group
        self.open: dict[str, _Open] = {}
        self._off = (host.ctx.on(ASK, self._approval), host.ctx.on(QUESTION, self._questions))

    async def _wait(self, session: _Open, waiting: Waiting) -> Approval | tuple[Answer, ...] | None:
        session.waiting[waiting.call_id] = waiting
        try:
            await waiting.answered.wait()  # the turn's cancellation (Cancel, a closing server) ends the wait
        finally:
            session.waiting.pop(waiting.call_id, None)
        return waiting.answer

    async def _approval(
        self, value: Approval | None, request: ApprovalRequest, next_: Any
    ) -> Approval | None:
        """An approval a session held here needs: it waits until a page answers it. Another session's (a subagent
        of another front end) goes on down the chain."""
        agent = request.context.agent
        session = self.open.get(agent.id) if agent is not None else None
        if session is None:
            return await next_(value)  # type: ignore[no-any-return]
        answer = await self._wait(session, Waiting(request.call_id, tool=request.tool, reason=request.reason))
        return answer if isinstance(answer, Approval) else Approval("cancelled")

    async def _questions(
        self, value: tuple[Answer, ...] | None, questions: Questions, next_: Any
    ) -> tuple[Answer, ...] | None:
        agent = questions.context.agent
        session = self.open.get(agent.id) if agent is not None else None
        if session is None:
            return await next_(value)  # type: ignore[no-any-return]
        waiting = Waiting(questions.context.call_id, tool="ask_user_question", questions=questions.questions)
        answer = await self._wait(session, waiting)
        return answer if isinstance(answer, tuple) else None

    def waiting(self, session_id: str) -> list[Waiting]:
        """What the session's running turn waits on, oldest first."""
        session = self.open.get(session_id)
        return [] if session is None else list(session.waiting.values())

    def answer(self, session_id: str, call_id: str, answer: Approval | tuple[Answer, ...]) -> None:
        """Answer what call `call_id` of the session waits on."""
        session = self.open.get(session_id)
        waiting = None if session is None else session.waiting.get(call_id)
        if waiting is None or waiting.answered.is_set():
            raise ChatError(f"call {call_id} of session {session_id} is not waiting for an answer")
        if isinstance(answer, tuple) != bool(waiting.questions):
            what = "questions" if waiting.questions else "an approval"
            raise ChatError(f"call {call_id} waits on {what}", 400)
        waiting.answer = answer
        waiting.answered.set()

    async def _hold(
        self,
        opened: AbstractAsyncContextManager[Agent],
        *,
        task_status: TaskStatus[_Open] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        async with opened as agent:
            session = self.open[agent.id] = _Open(agent)
            try:
                task_status.started(session)
                await session.closed.wait()
            finally:
                self.open.pop(agent.id, None)

    async def _turn(self, session: _Open, prompt: str | None) -> None:
        scope = session.turn = anyio.CancelScope()
        try:
            with scope:
                outcome = await session.agent.run(prompt)
                log.info("session %s: turn %d %s", session.agent.id, outcome.turn, outcome.kind)
        finally:
            session.turn = None

    async def start(self, prompt: str, cwd: Path) -> str:
        """A new session in `cwd`, its first turn running `prompt`; its id."""
        if not cwd.is_absolute() or not await anyio.Path(cwd).is_dir():
            raise ChatError(f"the workspace must be an existing absolute directory, got {str(cwd)!r}", 400)
        session: _Open = await self.group.start(self._hold, self.agents.create(self.host.options(cwd=cwd)))
        self.group.start_soon(self._turn, session, prompt)
        return session.agent.id

    async def prompt(self, session_id: str, text: str) -> str:
        """`text` to the session: steering when a turn runs (it enters at the next step), else a new turn (the
        session resumed first when the server does not hold it open). Says which: `steering` or `turn`."""
        session = self.open.get(session_id)
        if session is None:
            info = self.agents.store.info(session_id)
            cwd = Path(info.cwd) if info.cwd else Path.cwd()
            opened = self.agents.resume(session_id, self.host.options(cwd=cwd))
            session = await self.group.start(self._hold, opened)
        if session.turn is not None:
            await session.agent.queue(text, target="next-step")
            return "steering"
        self.group.start_soon(self._turn, session, text)
        return "turn"

    def cancel(self, session_id: str) -> None:
        """Cancel the session's running turn (logged aborted)."""
        session = self.open.get(session_id)
        if session is None or session.turn is None:
            raise ChatError(f"session {session_id} has no running turn to cancel")
        session.turn.cancel()

    def running(self, session_id: str) -> bool:
        """Whether a turn of `session_id` runs here now."""
        session = self.open.get(session_id)
        return session is not None and session.turn is not None

    def fork(self, session_id: str, turn: int) -> SessionInfo:
        """A new session inheriting `session_id`'s log through the end of its turn `turn` (a turn that ended)."""
        store = self.agents.store
        ends: dict[int, int] = {}
        for event in store.events(session_id, types=(TurnEnd,)):
            view = event.view()
            if isinstance(view, TurnEnd):
                ends[view.data.turn] = event.seq
        if turn not in ends:
            ended = ", ".join(map(str, sorted(ends))) or "none"
            raise ChatError(f"session {session_id} has no turn {turn} that ended (ended turns: {ended})", 400)
        return store.fork(session_id, ends[turn])

    def close(self) -> None:
        """Let every held session close (each running turn is cancelled first)."""
        for off in self._off:
            off()
        for session in self.open.values():
            if session.turn is not None:
                session.turn.cancel()
            session.closed.set()
