"""What a delegation is: the request a provider starts a child from, the run it hands back, the result the parent
gets, the provider interface itself, and the service's one error class."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from dsh.runtime.agent import Agent
from dsh.runtime.kernel import DshError
from dsh.runtime.session import SpawnedBy

__all__ = [
    "StopReason",
    "SubagentError",
    "SubagentProvider",
    "SubagentRequest",
    "SubagentResult",
    "SubagentRun",
    "SubagentStart",
]

StopReason = Literal["completed", "max-tokens", "aborted", "refusal", "error"]


class SubagentError(DshError):
    """The subagent service refused a registration or a start. `code` says why: `DUPLICATE_PROVIDER`,
    `NO_PROVIDER` or `DEPTH_LIMIT`."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class SubagentRequest:
    """A delegation: `prompt` is the child's first user message, `parent` the calling agent, `spawned_by` the
    parent's tool call that asks for it (the child's session is linked to it), `label` a short display label
    (logged in the child's `subagent/descriptor`, with `mode`: `one-shot`, or `continuable` for a child that stays
    available for more input). `background`: a one-shot child run as a background job of its parent (it runs in
    the parent's background, as a continuable child does)."""

    prompt: str
    parent: Agent
    spawned_by: SpawnedBy
    label: str | None = None
    mode: Literal["one-shot", "continuable"] = "one-shot"
    background: bool = False


@dataclass(frozen=True)
class SubagentResult:
    """How a child run ended. `output` is the text of the child's last non-empty assistant message, read from its
    own events only (a fork child never returns its inherited answers); `diagnostic` says what failed;
    `session_id` is the child's session, when it has one in this store; `meta` holds facts about a child outside
    this store (an external agent's own session id, say) for the parent's log: the subagent tool logs them as its
    result's `meta`, which the model never sees."""

    stop_reason: StopReason
    output: str = ""
    diagnostic: str | None = None
    session_id: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


class SubagentRun(Protocol):
    """A started child. `id` names the run (an in-process child's session id); `agent` is the child when it runs
    in this process, else None. `result()` runs it to its end (in the caller's task, so cancelling the caller
    cancels the child) and returns how it ended; it raises only for infrastructure faults."""

    @property
    def id(self) -> str: ...

    @property
    def agent(self) -> Agent | None: ...

    async def result(self) -> SubagentResult: ...


SubagentStart = Callable[[SubagentRequest], AbstractAsyncContextManager[SubagentRun]]
"""`async with start(request) as run`: entering publishes the child; leaving disposes the run (a child still
running is cancelled and waited for; its session is closed). A start that raises has cleaned up after itself."""


@dataclass(frozen=True, eq=False)
class SubagentProvider:
    """A way to run a child agent: `name` (the registry key, e.g. `spawn`, `fork`), `inherits_parent_context`
    (whether the child's conversation is seeded with the parent's completed turns: descriptive only, the
    subagent tool words itself from it) and `start`.

    The in-process providers (`spawn`, `fork`) live in this package; a provider whose child is an external
    process (`acp`) implements the same interface, with `SubagentRun.agent` None."""

    name: str
    inherits_parent_context: bool
    start: SubagentStart

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a subagent provider needs a non-empty name")
