"""The in-process providers: `spawn` (a fresh child session) and `fork` (a child that inherits the parent's
completed turns by reference), the run they hand back, and their plugins.

Both compose the child the same way before it is published: the parent's options (provider, model, cwd, ...)
in a scope of its own, one level deeper, linked to the parent's tool call; a runtime context telling it it is a
delegated subagent; and a `subagent/descriptor` logged inside its first turn.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import msgspec

from dsh.runtime.agent import AGENTS, PRE_STEP, Agent, AgentOptions, PreStep, StepGate, TurnOutcome
from dsh.runtime.kernel import Context, Next, Plugin
from dsh.runtime.prompt import SYSTEM_PROMPT, PromptContext
from dsh.runtime.session import SubagentDescriptor, SubagentDescriptorData

from ._service import SUBAGENTS
from ._types import StopReason, SubagentProvider, SubagentRequest, SubagentResult

__all__ = [
    "DELEGATION_CONTEXT",
    "DESCRIPTOR_VERSION",
    "ForkConfig",
    "InProcessRun",
    "SpawnConfig",
    "fork_plugin",
    "fork_provider",
    "result_of",
    "spawn_plugin",
    "spawn_provider",
]

DESCRIPTOR_VERSION = 2
"""The `subagent/descriptor` version the original writes for a one-shot child."""

DELEGATION_CONTEXT = PromptContext(
    "subagent:delegation",
    120,
    "You are a delegated subagent: another agent started you for one task, and only your final answer goes "
    "back to it. When the task needs something you cannot do or reach from here, do not keep retrying; state "
    "the limitation in your answer so the delegating agent can handle it.",
)
"""The runtime context every in-process child gets in its own scope (spec §3.4's `subagent:delegation`)."""

_STOP_REASONS: dict[str, StopReason] = {
    "completed": "completed",
    "max-tokens": "max-tokens",
    "aborted": "aborted",
    "blocked": "refusal",
}


def result_of(outcome: TurnOutcome, session_id: str) -> SubagentResult:
    """The result of a child's turn: its stop reason (`blocked` is a refusal; anything unknown an error), its
    text, and for a failure what failed."""
    diagnostic = None
    if outcome.failure is not None:
        failure = outcome.failure
        diagnostic = f"{failure.code}: {failure.message}" if failure.code else failure.message
    return SubagentResult(
        stop_reason=_STOP_REASONS.get(outcome.kind, "error"),
        output=outcome.text,
        diagnostic=diagnostic,
        session_id=session_id,
    )


class InProcessRun:
    """A child agent of this process. `result()` runs its one turn in the caller's task: cancelling the caller
    aborts the turn (logged `aborted{parent}`) and propagates."""

    def __init__(self, child: Agent, request: SubagentRequest) -> None:
        self._child = child
        self._request = request
        self._result: SubagentResult | None = None

    @property
    def id(self) -> str:
        return self._child.id

    @property
    def agent(self) -> Agent:
        return self._child

    async def result(self) -> SubagentResult:
        if self._result is None:
            outcome = await self._child.run(self._request.prompt, cancelled_by="parent")
            self._result = result_of(outcome, self._child.id)
        return self._result


def child_options(parent: Agent, request: SubagentRequest | None = None) -> AgentOptions:
    """The parent's options, with the parent's workspace made explicit (and, for a continuable child or one run as
    a background job, marked as running in the background)."""
    background = request is not None and (request.mode == "continuable" or request.background)
    return dataclasses.replace(parent.options, cwd=parent.cwd, background=background)


def _compose(child: Agent, provider: str, request: SubagentRequest) -> None:
    """Everything the child needs before its first request: the delegation context and the descriptor."""
    child.ctx.get(SYSTEM_PROMPT).context(DELEGATION_CONTEXT)
    descriptor = SubagentDescriptor(
        data=SubagentDescriptorData(
            version=DESCRIPTOR_VERSION, mode=request.mode, provider=provider, label=request.label
        )
    )
    logged = False

    async def log_descriptor(gate: StepGate, step: PreStep, next_: Next[StepGate]) -> StepGate:
        # inside the child's first turn, before its first step, where the original logs it
        nonlocal logged
        if not logged:
            logged = True
            await child.append(descriptor)
        return await next_(gate)

    child.ctx.on(PRE_STEP, log_descriptor)


def spawn_provider(ctx: Context, name: str = "spawn") -> SubagentProvider:
    """A provider whose child is a fresh session: it sees nothing of the parent's conversation."""

    @asynccontextmanager
    async def start(request: SubagentRequest) -> AsyncIterator[InProcessRun]:
        parent = request.parent
        agents = ctx.get(AGENTS)
        async with agents.create(
            child_options(parent, request), parent=parent, spawned_by=request.spawned_by
        ) as child:
            _compose(child, name, request)
            yield InProcessRun(child, request)

    return SubagentProvider(name=name, inherits_parent_context=False, start=start)


def fork_provider(ctx: Context, name: str = "fork") -> SubagentProvider:
    """A provider whose child is forked from the parent's log, by reference, through its last `turn/end`: it
    inherits the completed turns, never the turn in flight (the one calling this)."""

    @asynccontextmanager
    async def start(request: SubagentRequest) -> AsyncIterator[InProcessRun]:
        parent = request.parent
        agents = ctx.get(AGENTS)
        async with agents.fork(
            parent.id, child_options(parent, request), parent=parent, spawned_by=request.spawned_by
        ) as child:
            _compose(child, name, request)
            yield InProcessRun(child, request)

    return SubagentProvider(name=name, inherits_parent_context=True, start=start)


class SpawnConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`name`: the provider's registry key (what a subagent tool's `provider` names)."""

    name: str = "spawn"


class ForkConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`name`: the provider's registry key (what a subagent tool's `provider` names)."""

    name: str = "fork"


def _apply_spawn(ctx: Context, config: SpawnConfig) -> None:
    ctx.get(SUBAGENTS).register(spawn_provider(ctx, config.name))


def _apply_fork(ctx: Context, config: ForkConfig) -> None:
    ctx.get(SUBAGENTS).register(fork_provider(ctx, config.name))


spawn_plugin = Plugin(
    name="subagent-spawn",
    apply=_apply_spawn,
    config=SpawnConfig,
    needs=(SUBAGENTS, AGENTS),
    description="the spawn subagent provider: a child agent in a fresh session of this process",
)

fork_plugin = Plugin(
    name="subagent-fork",
    apply=_apply_fork,
    config=ForkConfig,
    needs=(SUBAGENTS, AGENTS),
    description="the fork subagent provider: a child agent inheriting the parent's completed turns by reference",
)
