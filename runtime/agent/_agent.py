"""`Agent`: one session being driven by the loop (its log writer, its scoped context, its options, its inbox) and
`AgentOptions`, what an agent is created with. The agent owns what the loop reads back from its own log: the
projected messages (the log's surface) and, through its fold `AgentState`, the last request header, the last request
context, the last runtime-context snapshot and the input waiting in its inbox (each queue mutation is an
`agent/inbox/spliced` event, so the inbox is the log's)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from dsh.runtime.kernel import Context
from dsh.runtime.llm import (
    AssistantMessage,
    CallConfig,
    Message,
    MessageId,
    TextBlock,
    UserBlock,
    UserMessage,
    UserSource,
)
from dsh.runtime.session import (
    AbortKind,
    EpochHeader,
    Event,
    InboxSpliced,
    InboxSplicedData,
    InboxTarget,
    RequestContextData,
    SessionInfo,
    SessionLog,
    StoredEvent,
    TurnEnd,
    TurnEndData,
    decode_data,
)
from dsh.runtime.session import AssistantMessageData as _ModelData
from dsh.runtime.session import ToolResultData as _ResultData

from ._events import EVENT, AgentEvent
from ._inbox import BOUNDARY_TYPES, INBOX_GATE, ImmediateGate, InboxGate, InputSource, QueueTarget
from ._outcome import TurnOutcome
from ._state import AgentState, InboxItem

if TYPE_CHECKING:
    from ._registry import AgentRegistry

__all__ = ["Agent", "AgentOptions", "InboxInput"]

InboxInput = str | Sequence[UserBlock]
"""What can be queued: text, or the content blocks of one user message."""
_IMMEDIATE = ImmediateGate()


@dataclass(frozen=True)
class AgentOptions:
    """What an agent runs with. `provider`/`model` route its calls (an `agent/request` listener may supply them
    instead); `cwd` is its workspace (the session's cwd, and `{{cwd}}`); `max_steps` bounds one turn (a model that
    keeps calling tools ends it `error`); `background` marks a child that runs in its parent's background (a
    continuable subagent): terminal views do not stream it into the parent's output."""

    provider: str | None = None
    model: str | None = None
    cwd: Path | None = None
    config: CallConfig = field(default_factory=CallConfig)
    max_steps: int = 100
    background: bool = False


class Agent:
    """One live session: `log` (the only writer of it), `state` (the agent's fold of that log, fed by it), `ctx` (a
    scope of its own: per-agent tools and listeners), `options`. Input is queued (`queue`): a prompt between turns starts the next turn (`serve`, run by
    the registry while the agent is open, starts it), steering queued during a turn enters at its next step. `run`
    queues a prompt and runs its turn. Turns run one at a time. What the loop reads back from its own log (the
    messages, the last request header and context, the runtime-context snapshot, the inbox) is derived from the
    log (its surface, and `state`), never stored on the agent."""

    def __init__(
        self,
        registry: AgentRegistry,
        ctx: Context,
        log: SessionLog,
        state: AgentState,
        options: AgentOptions,
        *,
        parent: Agent | None = None,
        tasks: TaskGroup | None = None,
    ) -> None:
        self.registry = registry
        self.ctx = ctx
        self.log = log
        self._state = state
        self.options = options
        self.parent = parent
        self._messages: dict[int, Message] = {}
        self._lock = anyio.Lock()
        self._queued = anyio.Event()
        self._turn_ended = anyio.Event()
        self._tasks = tasks
        self._last_end: TurnEndData | None = None

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def info(self) -> SessionInfo:
        return self.log.info

    @property
    def cwd(self) -> Path | None:
        """The workspace: the options' cwd, else the session's stored cwd, else none."""
        if self.options.cwd is not None:
            return self.options.cwd
        return Path(self.info.cwd) if self.info.cwd else None

    @property
    def depth(self) -> int:
        return self.info.delegation_depth

    @property
    def state(self) -> AgentState:
        """What this agent derives from its log (header, request context, snapshots, inbox, settled jobs): the fold
        its log was opened with, fed with every append."""
        return self._state

    @property
    def header(self) -> EpochHeader | None:
        """The session's latest `request/header` snapshot (inherited prefix included), from the agent's state."""
        return self._state.header

    @property
    def request_context(self) -> RequestContextData | None:
        """The session's latest `request/context`; the loop logs a new one only when a step's provider, model or
        context window differs from it."""
        return self._state.request_context

    @property
    def snapshot(self) -> str | None:
        """The newest runtime-context snapshot on the surface; the loop sends the context again when it differs."""
        return self._state.snapshot_on(self.log.state.surface.nodes)

    def messages(self) -> tuple[Message, ...]:
        """The model-visible history: the log's surface, as messages (empty assistant messages skipped)."""
        out: list[Message] = []
        cache = self._messages
        for node in self.log.state.surface.nodes:
            message = node.typed or cache.get(node.seq)
            if message is None:
                data = decode_data(node.type, node.data, node.seq)
                message = data.message if isinstance(data, _ModelData | _ResultData) else data
                cache[node.seq] = message
            if isinstance(message, AssistantMessage) and not message.content:
                continue
            out.append(message)
        return tuple(out)

    @property
    def gate(self) -> InboxGate:
        """The inbox gate of this agent's host (`INBOX_GATE`), else the immediate one."""
        return self.ctx.get(INBOX_GATE) if self.ctx.has(INBOX_GATE) else _IMMEDIATE

    @property
    def busy(self) -> bool:
        """Whether a turn is running (input queued now as `next-step` enters it)."""
        return self.log.state.open_turn is not None

    def pending(self, target: InboxTarget) -> tuple[InboxItem, ...]:
        """The input waiting in queue `target`, oldest first (the agent's state)."""
        return tuple(self._state.inbox[target])

    async def append(self, event: Event, *, written: str | None = None) -> StoredEvent:
        """Append `event` to the log and tell `agent/event` listeners (`written`: see `SessionLog.append`). A turn or
        step boundary, or a claim, is shown to the inbox gate first (input due before it is spliced before it)."""
        if isinstance(event, BOUNDARY_TYPES) or (
            isinstance(event, InboxSpliced) and event.data.removed_count
        ):
            await self.gate.boundary(self, event)
        stored = self.log.append(event, written=written)
        if isinstance(event, TurnEnd):
            self._last_end = event.data
            ended, self._turn_ended = self._turn_ended, anyio.Event()
            ended.set()
        await self.ctx.emit(EVENT, AgentEvent(self, stored))
        return stored

    async def queue(
        self,
        content: InboxInput,
        *,
        target: QueueTarget = "next-turn",
        source: InputSource | None = None,
        wake: bool = True,
        before: Event | None = None,
        inline: bool = False,
    ) -> UserMessage:
        """Queue one user-role message for this agent and return it. `next-turn` starts the next turn (when the
        agent is idle and `wake` is set, `serve` starts it at once); `next-step` is steering: it enters the running
        turn at its next step (or the next turn, if none is running); `next` is either, decided when the input is
        admitted: steering while a turn runs, else the next turn (a notice that should reach the agent soonest).
        `source` says where it comes from (default: the user); a subagent's report names the sending session and a
        job's notice its job, which the inbox gate reads to pair the input with its recording. The splice is logged
        when the inbox gate admits the input: at once, except in a replay; `before`, an event the input reports on
        (a background job's outcome), is appended just before it, so the fact lands in the log where the input does;
        `inline` says this agent's own running turn queues it (see `InboxGate.deliver`)."""
        blocks: tuple[UserBlock, ...] = (TextBlock(content),) if isinstance(content, str) else tuple(content)
        said = source or UserSource()
        queued: list[UserMessage] = []
        admitted: list[InboxTarget] = []

        async def splice() -> None:
            # the id is minted when the input enters the log, so its place in the id sequence is the log's
            message = UserMessage(id=MessageId(self.log.ids.new_id("message")), content=blocks, source=said)
            queue: InboxTarget = target if target != "next" else ("next-step" if self.busy else "next-turn")
            admitted.append(queue)
            data = InboxSplicedData(target=queue, start=len(self._state.inbox[queue]), inserted=(message,))
            if before is not None:
                await self.append(before)
            await self.append(InboxSpliced(data=data))
            queued.append(message)

        await self.gate.deliver(self, target, said, splice, inline=inline)
        if not queued:
            raise RuntimeError(f"the inbox gate of {self!r} returned without admitting the input")
        if wake and admitted[0] == "next-turn":
            self._queued.set()
        return queued[0]

    async def claim(self, *targets: InboxTarget) -> list[InboxItem]:
        """Take everything waiting in `targets` (in that order), logging one claim per non-empty queue."""
        claimed: list[InboxItem] = []
        for target in targets:
            items = self.pending(target)
            if items:
                await self.append(
                    InboxSpliced(
                        data=InboxSplicedData(target=target, start=0, removed_count=len(items), inserted=())
                    )
                )
                claimed.extend(items)
        return claimed

    async def run(
        self, prompt: str | Sequence[UserBlock] | None, *, cancelled_by: AbortKind = "user"
    ) -> TurnOutcome:
        """Queue `prompt` and run the turn it starts (None: run a turn with the input already waiting, such as
        steering a cancelled turn never took in); returns how it ended. Turns never overlap: a second call
        waits for the first. Cancelling the caller aborts the turn (logged `aborted{cancelled_by}`: a subagent's
        runner says `parent`) and propagates."""
        from ._loop import run_turn

        async with self._lock:
            if prompt is not None:
                await self.queue(prompt, wake=False)
            elif not (self.pending("next-turn") or self.pending("next-step")):
                raise ValueError(f"{self!r} has no input waiting in its inbox: give run() a prompt")
            return await run_turn(self, cancelled_by=cancelled_by)

    async def serve(self) -> None:
        """Start a turn whenever a prompt waits and no turn runs (background input waking an idle agent, input a
        crashed run left unclaimed). Runs until cancelled; the registry runs it while the agent is open."""
        from ._loop import run_turn

        while True:
            if not self.pending("next-turn"):
                await self._queued.wait()
                self._queued = anyio.Event()
            async with self._lock:
                waiting = self.pending("next-turn")
                if waiting:
                    await run_turn(self)
                if waiting and self.pending("next-turn")[:1] == waiting[:1]:
                    # the turn ended before it claimed anything (it could not start): wait for new input
                    await self._queued.wait()
                    self._queued = anyio.Event()

    async def start_background(self, work: Callable[..., Coroutine[Any, Any, None]], *args: object) -> Any:
        """Run `work(*args, task_status=...)` in the background for as long as this agent is open (it is cancelled
        when the agent closes, so no background work outlives it); returns what `work` passes to
        `task_status.started(...)`. `work` contains its own failures: one that escapes ends the agent's host."""
        if self._tasks is None:
            raise RuntimeError(
                f"{self!r} was not opened by an AgentRegistry: it has no place for background work"
            )
        return await self._tasks.start(work, *args)

    async def wait_turn_end(self, turn: int) -> TurnEndData | None:
        """Return once turn `turn` (or a later one) has ended: the last `turn/end` this agent logged (None: the turn
        ended before this agent was opened)."""
        while not (self.log.state.last_turn >= turn and self.log.state.open_turn is None):
            await self._turn_ended.wait()
        return self._last_end

    def __repr__(self) -> str:
        return f"Agent({self.id!r})"
