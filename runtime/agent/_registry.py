"""`AgentRegistry` (service `AGENTS`): creates, resumes and forks agents over the session store, serves their inboxes
while they are open (a prompt waiting starts a turn) and disposes them;
and the `agent` plugin, which provides it and registers the `model` and `cwd` prompt variables the loop owns."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from dsh.runtime.kernel import Context, NoConfig, Plugin, ServiceKey
from dsh.runtime.llm import LLM
from dsh.runtime.prompt import SYSTEM_PROMPT, AssembleContext
from dsh.runtime.session import STORE, SessionStoreProtocol, SpawnedBy, TurnEnd, open_log
from dsh.runtime.tools import TOOLS

from ._agent import Agent, AgentOptions
from ._events import SESSION_END, SESSION_START, SessionClosing, SessionOpened
from ._state import AgentState

__all__ = ["AGENTS", "AgentRegistry", "last_turn_end", "plugin"]


class AgentRegistry:
    """The live agents of one host. Each agent is an async context: leaving it flushes and closes its log and
    disposes its scope (its tools and listeners)."""

    def __init__(self, ctx: Context, store: SessionStoreProtocol) -> None:
        self._ctx = ctx
        self.store = store
        self._live: dict[str, Agent] = {}

    def get(self, session_id: str) -> Agent | None:
        """The live agent of `session_id`, if one is open in this process."""
        return self._live.get(session_id)

    def live(self) -> list[Agent]:
        return list(self._live.values())

    @asynccontextmanager
    async def create(
        self,
        options: AgentOptions | None = None,
        *,
        parent: Agent | None = None,
        spawned_by: SpawnedBy | None = None,
    ) -> AsyncIterator[Agent]:
        """A new session (a child of `parent` when given: one level deeper, linked by `spawned_by`)."""
        options = options or AgentOptions()
        cwd = options.cwd or (parent.cwd if parent is not None else None)
        info = self.store.create(
            cwd=None if cwd is None else str(cwd),
            parent_id=None if parent is None else parent.id,
            delegation_depth=0 if parent is None else parent.depth + 1,
            spawned_by=spawned_by,
        )
        async with self._open(info.id, options, parent, fresh=True, source="startup") as agent:
            yield agent

    @asynccontextmanager
    async def resume(self, session_id: str, options: AgentOptions | None = None) -> AsyncIterator[Agent]:
        """Continue a stored session (an open last turn is repaired first)."""
        async with self._open(session_id, options or AgentOptions(), None, source="resume") as agent:
            yield agent

    @asynccontextmanager
    async def fork(
        self,
        session_id: str,
        options: AgentOptions | None = None,
        *,
        at: int | None = None,
        parent: Agent | None = None,
        spawned_by: SpawnedBy | None = None,
    ) -> AsyncIterator[Agent]:
        """A new session that inherits `session_id`'s log by reference through seq `at`, by default through its last
        `turn/end` (completed turns only: a turn in flight is never inherited). With no completed turn there is
        nothing to inherit and the session starts empty.

        With `parent` (the live agent of `session_id`, delegating to the fork) the child is a subagent: one level
        deeper than the parent, linked to it even when it inherits nothing, and to its tool call by `spawned_by`."""
        if parent is not None and parent.id != session_id:
            raise ValueError(
                f'a delegated fork inherits its parent\'s log: parent "{parent.id}" cannot fork "{session_id}"'
            )
        depth = None if parent is None else parent.depth + 1
        boundary = at if at is not None else last_turn_end(self.store, session_id)
        if boundary is None:
            info = self.store.create(
                cwd=self.store.info(session_id).cwd,
                parent_id=None if parent is None else parent.id,
                delegation_depth=depth or 0,
                spawned_by=spawned_by,
            )
        else:
            info = self.store.fork(session_id, at=boundary, delegation_depth=depth, spawned_by=spawned_by)
        source = "startup" if boundary is None else "fork"
        async with self._open(
            info.id, options or AgentOptions(), parent, fresh=boundary is None, source=source
        ) as agent:
            yield agent

    @asynccontextmanager
    async def _open(
        self,
        session_id: str,
        options: AgentOptions,
        parent: Agent | None,
        *,
        fresh: bool = False,
        source: str,
    ) -> AsyncIterator[Agent]:
        # a fresh session has nothing to repair and no seed to mark (spec §1.9); any other is resumed
        state = AgentState()
        async with open_log(self.store, session_id, repair=not fresh, folds=(state,)) as log:
            scope = self._ctx.scoped(f"agent:{session_id}")
            try:
                try:
                    async with anyio.create_task_group() as group:
                        agent = Agent(self, scope, log, state, options, parent=parent, tasks=group)
                        self._live[session_id] = agent
                        # before `serve`: what a session-start listener queues waits for the first turn
                        await agent.ctx.emit(SESSION_START, SessionOpened(agent, source))
                        group.start_soon(agent.serve)  # turns started by input, not by the caller
                        try:
                            yield agent
                            await agent.ctx.emit(SESSION_END, SessionClosing(agent))
                        finally:
                            group.cancel_scope.cancel()
                except BaseExceptionGroup as grouped:
                    # `serve` never raises (turns end in turn/end, not exceptions) and background work contains its
                    # own failures, so the group holds only the caller's own exception: give it back unwrapped
                    if len(grouped.exceptions) == 1:
                        raise grouped.exceptions[0] from grouped
                    raise
                finally:
                    # a turn or background work cancelled with the agent may have been flushing: what it appended
                    # is committed before the log closes (the writer is still running here)
                    with anyio.CancelScope(shield=True):
                        await log.flush()
            finally:
                self._live.pop(session_id, None)
                scope.dispose()


def last_turn_end(store: SessionStoreProtocol, session_id: str) -> int | None:
    """The seq of the last `turn/end` of a session's log (None: no turn has completed)."""
    last = None
    for event in store.events(session_id, types=(TurnEnd,)):
        last = event.seq
    return last


AGENTS = ServiceKey[AgentRegistry]("agents")


def _model(context: AssembleContext) -> str | None:
    """`{{model}}`: the context agent's `options.model`; with no agent, the caller's `model` fact (`dsh prompt`)."""
    agent = context.agent
    if isinstance(agent, Agent):
        return agent.options.model or None
    return context.facts.get("model")


def _cwd(context: AssembleContext) -> str | None:
    """`{{cwd}}`: the context agent's workspace (the session's cwd); with no agent, the caller's `cwd` fact."""
    agent = context.agent
    if isinstance(agent, Agent):
        cwd = agent.cwd
        return None if cwd is None else str(cwd)
    return context.facts.get("cwd")


def _apply(ctx: Context, config: NoConfig) -> None:
    ctx.provide(AGENTS, AgentRegistry(ctx, ctx.get(STORE)))
    prompt = ctx.get(SYSTEM_PROMPT)
    # The loop's facts, projected from the agent being assembled for (one owner each: the agent's options and
    # session; `facts` only stand in when an assembly has no agent).
    prompt.variable("model", _model)
    prompt.variable("cwd", _cwd)


plugin = Plugin(
    name="agent",
    apply=_apply,
    needs=(STORE, SYSTEM_PROMPT, LLM, TOOLS),
    provides=(AGENTS,),
    description="the agent loop: agents over the session store, and the model and cwd prompt variables",
)
