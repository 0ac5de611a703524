"""`Agent`: one session being driven by the loop (its log writer, its scoped context, its options) and
`AgentOptions`, what an agent is created with. The agent owns what the loop reads back from its own log: the
projected messages, the last request header, the last request context and the last runtime-context snapshot."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from runtime.kernel import Context
from runtime.llm import AssistantMessage, CallConfig, Message, TextBlock, UserBlock
from runtime.session import (
    AbortKind,
    EpochHeader,
    Event,
    RequestContextData,
    SessionInfo,
    SessionLog,
    StoredEvent,
    decode_data,
)
from runtime.session import AssistantMessageData as _ModelData
from runtime.session import ToolResultData as _ResultData

from ._events import EVENT, AgentEvent
from ._outcome import TurnOutcome

if TYPE_CHECKING:
    from ._registry import AgentRegistry

__all__ = ["Agent", "AgentOptions"]


@dataclass(frozen=True)
class AgentOptions:
    """What an agent runs with. `provider`/`model` route its calls (an `agent/request` listener may supply them
    instead); `cwd` is its workspace (the session's cwd, and `{{cwd}}`); `max_steps` bounds one turn (a model that keeps calling tools ends it `error`)."""

    provider: str | None = None
    model: str | None = None
    cwd: Path | None = None
    config: CallConfig = field(default_factory=CallConfig)
    max_steps: int = 100


class Agent:
    """One live session: `log` (the only writer of it), `ctx` (a scope of its own: per-agent tools and
    listeners), `options`. Turns run one at a time through `run`. What the loop reads back from its own log (the
    messages, the last request header and context, the runtime-context snapshot) is derived from the log's state,
    never stored on the agent."""

    def __init__(
        self,
        registry: AgentRegistry,
        ctx: Context,
        log: SessionLog,
        options: AgentOptions,
        *,
        parent: Agent | None = None,
    ) -> None:
        self.registry = registry
        self.ctx = ctx
        self.log = log
        self.options = options
        self.parent = parent
        self._messages: dict[int, Message] = {}
        self._lock = anyio.Lock()

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
    def header(self) -> EpochHeader | None:
        """The session's latest `request/header` snapshot (inherited prefix included), from the log's state."""
        return self.log.state.header

    @property
    def request_context(self) -> RequestContextData | None:
        """The session's latest `request/context`; the loop logs a new one only when a step's provider, model or
        context window differs from it."""
        return self.log.state.request_context

    @property
    def snapshot(self) -> str | None:
        """The newest runtime-context snapshot on the surface; the loop sends the context again when it differs."""
        return self.log.state.snapshot

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

    async def append(self, event: Event, *, written: str | None = None) -> StoredEvent:
        """Append `event` to the log and tell `agent/event` listeners (`written`: see `SessionLog.append`)."""
        stored = self.log.append(event, written=written)
        await self.ctx.emit(EVENT, AgentEvent(self, stored))
        return stored

    async def run(
        self, prompt: str | Sequence[UserBlock], *, cancelled_by: AbortKind = "user"
    ) -> TurnOutcome:
        """Run one turn with `prompt` as the user's message; returns how it ended. Turns never overlap: a second
        call waits for the first. Cancelling the caller aborts the turn (logged `aborted{cancelled_by}`: a subagent's
        runner says `parent`) and propagates."""
        from ._loop import run_turn

        blocks: tuple[UserBlock, ...] = (TextBlock(prompt),) if isinstance(prompt, str) else tuple(prompt)
        async with self._lock:
            return await run_turn(self, blocks, cancelled_by=cancelled_by)

    def __repr__(self) -> str:
        return f"Agent({self.id!r})"
