"""`Agent`: one session being driven by the loop (its log writer, its scoped context, its options) and
`AgentOptions`, what an agent is created with. The agent owns what the loop reads back from its own log: the
projected messages, the last request header, the last request context and the last runtime-context snapshot."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from runtime.kernel import Context
from runtime.llm import AssistantMessage, CallConfig, LlmFailure, Message, TextBlock, UserBlock
from runtime.session import Event, RequestContext, SessionInfo, SessionLog, StoredEvent, project

from ._events import EVENT, AgentEvent
from ._records import AbortKind, RequestContextData

if TYPE_CHECKING:
    from ._registry import AgentRegistry

__all__ = ["Agent", "AgentOptions", "TurnOutcome"]

_MESSAGE: msgspec.json.Decoder[Message] = msgspec.json.Decoder(Message)


class _Content(msgspec.Struct):
    content: list[msgspec.Raw]


class _SourceForm(msgspec.Struct):
    kind: str | None = None
    form: str | None = None


class _Sourced(msgspec.Struct):
    content: list[Any]
    source: _SourceForm | None = None


_CONTENT = msgspec.json.Decoder(_Content)
_SOURCED = msgspec.json.Decoder(_Sourced)


@dataclass(frozen=True)
class AgentOptions:
    """What an agent runs with. `provider`/`model` route its calls (an `agent/request` listener may supply them
    instead); `cwd` is its workspace (the session's cwd, and `{{cwd}}`); `persona` replaces the deployment's
    persona for this agent only; `max_steps` bounds one turn (a model that keeps calling tools ends it `error`)."""

    provider: str | None = None
    model: str | None = None
    cwd: Path | None = None
    config: CallConfig = field(default_factory=CallConfig)
    persona: str | None = None
    max_steps: int = 100


@dataclass(frozen=True)
class TurnOutcome:
    """How a turn ended: `kind` is its `turn/end` reason (`completed`, `error`, `aborted`, `max-tokens`,
    `blocked`); `text` the visible text of its last assistant message; `failure` the model failure of an error."""

    turn: int
    kind: str
    text: str = ""
    failure: LlmFailure | None = None
    error: BaseException | None = field(default=None, compare=False)


class Agent:
    """One live session: `log` (the only writer of it), `ctx` (a scope of its own: per-agent persona, tools and
    listeners), `options`. Turns run one at a time through `run`."""

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
        header = project(log.store.events(self.id, types=("request/header",))).header_json
        self.header: Any = None if header is None else msgspec.json.decode(header)
        self.header_written = False
        self.request_context: RequestContextData | None = self._last_request_context()
        """The session's last `request/context` (inherited prefix included); the loop logs a new one only when a
        step's provider, model or context window differs from it."""
        self.snapshot: str | None = self._last_snapshot()

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

    def messages(self) -> tuple[Message, ...]:
        """The model-visible history: the log's surface, as messages (empty assistant messages skipped)."""
        out: list[Message] = []
        cache = self._messages
        for node in self.log.state.surface.nodes:
            message = cache.get(node.seq)
            if message is None:
                message = cache[node.seq] = _MESSAGE.decode(node.message)
            if isinstance(message, AssistantMessage) and not message.content:
                continue
            out.append(message)
        return tuple(out)

    def _last_request_context(self) -> RequestContextData | None:
        last = None
        for stored in self.log.store.events(self.id, types=("request/context",)):
            last = stored
        if last is None:
            return None
        view = last.view()
        assert isinstance(view, RequestContext), "the store decodes request/context as RequestContext"
        data = view.data
        return RequestContextData(
            provider=data.provider, model=data.model, context_window=data.context_window
        )

    def _last_snapshot(self) -> str | None:
        for node in reversed(self.log.state.surface.nodes):
            if node.type != "user/message":
                continue
            message = _SOURCED.decode(node.message)
            if message.source is not None and message.source.form == "snapshot":
                texts = [b.get("text", "") for b in message.content if isinstance(b, dict)]
                return "".join(texts)
        return None

    async def append(self, event: Event) -> StoredEvent:
        """Append `event` to the log and tell `agent/event` listeners."""
        stored = self.log.append(event)
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
