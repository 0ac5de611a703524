"""The inbox seam: `InboxGate` (service `INBOX_GATE`), through which every input queued for an agent and every turn
and step boundary the agent logs passes. The default gate admits each input at once; the replay adapter's gate
holds each one until the position its recording spliced it at, so background input lands in a re-run exactly where
it landed in the recording, however the scheduler interleaves the senders."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, Protocol

from dsh.runtime.kernel import ServiceKey
from dsh.runtime.llm import (
    InstructionsSource,
    JobNoticeSource,
    OtherSource,
    PluginSource,
    SubagentReportSource,
    SubagentSettledSource,
    UserSource,
)
from dsh.runtime.session import Event, InboxTarget, StepEnd, StepStart, TurnEnd, TurnStart

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = [
    "BOUNDARY_TYPES",
    "INBOX_GATE",
    "ImmediateGate",
    "InboxGate",
    "InputSource",
    "QueueTarget",
    "Splice",
]

BOUNDARY_TYPES: tuple[type[Event], ...] = (TurnStart, StepStart, StepEnd, TurnEnd)
"""The events an agent shows its gate before appending them: the positions input can be pinned to."""

QueueTarget = InboxTarget | Literal["next"]
"""Where queued input goes: a queue (`next-turn`, `next-step`), or `next`: the running turn's next step if a turn is
running when the input is admitted, else the next turn (which it starts when the agent is idle). Decided at
admission, so a replay that admits the input at its recorded position decides as the recording did."""

InputSource = (
    UserSource
    | PluginSource
    | InstructionsSource
    | SubagentReportSource
    | SubagentSettledSource
    | JobNoticeSource
    | OtherSource
)
"""Where a queued input comes from: the user, a plugin, workspace instructions, a background subagent (its report,
its settled turn's notice: each names the sending session), a background job's notice (naming the job), or a kind
dsh does not model. A gate that pairs input with a recording reads the sender and the job from the source."""

Splice = Callable[[], Awaitable[None]]
"""Appends the queued input's `agent/inbox/spliced`: the gate calls it once, when it admits the input."""


class InboxGate(Protocol):
    """Decides when queued input enters an agent's inbox."""

    async def deliver(
        self,
        agent: Agent,
        target: QueueTarget,
        source: InputSource,
        splice: Splice,
        *,
        inline: bool = False,
    ) -> None:
        """Admit an input from `source` for `agent`'s `target` queue by awaiting `splice()` (now or later); returns
        after it. `source` says who sent it (a subagent's session id, a job's id), so a replay pairs it with its
        recorded counterpart. `inline`: the agent's own turn queues it (a hook's context, a Stop hook's continuation,
        workspace instructions at a step's end), so it cannot wait for the agent's next boundary: a gate admits it
        now."""
        ...

    async def boundary(self, agent: Agent, event: Event) -> None:
        """Called before `agent` appends a boundary event (`BOUNDARY_TYPES`) or a claim (an `agent/inbox/spliced`
        that removes items); may wait for input due before it."""
        ...


class ImmediateGate:
    """The live gate: every input is spliced the moment it is queued; boundaries never wait."""

    async def deliver(
        self,
        agent: Agent,
        target: QueueTarget,
        source: InputSource,
        splice: Splice,
        *,
        inline: bool = False,
    ) -> None:
        await splice()

    async def boundary(self, agent: Agent, event: Event) -> None:
        return None


INBOX_GATE = ServiceKey[InboxGate]("agent/inbox-gate")
"""Optional: without it an agent uses `ImmediateGate`."""
