"""`AcpServer`: dsh's agents served as an ACP agent. An ACP session is a dsh session (same id); each open one is
held by a task of the server's task group for as long as the connection lives, so its log writer outlives the
request that opened it. Turns stream to the client as `session/update` notifications through `agent/event`; how a
turn ended maps to the prompt's stop reason or to a JSON-RPC error (see the package README)."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio
from acp import PROTOCOL_VERSION, Client, RequestError
from acp.helpers import update_agent_message_text, update_available_commands
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AudioContentBlock,
    AvailableCommand,
    CloseSessionResponse,
    EmbeddedResourceContentBlock,
    ForkSessionResponse,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SessionResumeCapabilities,
    SetSessionModeResponse,
    SseMcpServer,
    StopReason,
    TextContentBlock,
    TextResourceContents,
    ToolCallUpdate,
)
from anyio.abc import TaskGroup, TaskStatus

from dsh.plugins.compaction import COMPACTION
from dsh.plugins.interaction import INTERACTION, PRESETS
from dsh.plugins.mcp import MCP, HttpServer, McpService, ServerSpec, StdioServer
from dsh.runtime.agent import (
    AGENTS,
    COMPACT,
    EVENT,
    SLASH_COMMAND,
    Agent,
    AgentEvent,
    Compacted,
    CompactRequest,
    SlashCommand,
    TurnOutcome,
    last_turn_end,
)
from dsh.runtime.host import Host
from dsh.runtime.kernel import Disposer
from dsh.runtime.llm import TextBlock, UserBlock
from dsh.runtime.session import AssistantChunk, SessionInUseError, SessionNotFoundError
from dsh.runtime.tools import ASK, Approval, ApprovalRequest

from ._updates import SessionUpdate, SessionUpdates

__all__ = [
    "AGENT_NAME",
    "CUSTOM_MODE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "AcpServer",
    "mcp_specs",
    "stop_reason",
]

AGENT_NAME = "dsh"
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

log = logging.getLogger("dsh.acp")

ContentBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


CUSTOM_MODE = "custom"
"""The mode a session is in when no permission preset is in force."""
_CUSTOM_HELP = (
    "The sandbox mode and approval policy this session has without a preset: the deployment's, or what /sandbox "
    "and /approval set. Choose a preset to replace them."
)


class _Session:
    """One open ACP session: its agent and its running prompt (one at a time)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.live = SessionUpdates("live", agent.cwd)
        self.busy = anyio.Lock()
        self.turn: anyio.CancelScope | None = None
        self.closed = anyio.Event()  # set: close the session once its running turn has ended
        self.gone = anyio.Event()  # set: its log is closed


def stop_reason(outcome: TurnOutcome, session_id: str) -> StopReason:
    """The ACP stop reason of a turn, or the JSON-RPC error its failure is answered with."""
    kind = outcome.kind
    if kind == "completed":
        return "end_turn"
    if kind == "max-tokens":
        return "max_tokens"
    if kind == "blocked":
        return "refusal"
    if kind == "aborted":  # a recorded cancellation replayed: the stream ended aborted
        return "cancelled"
    failure = outcome.failure
    if failure is not None and failure.code == "MAX_STEPS":
        return "max_turn_requests"
    message = failure.message if failure is not None else f"the turn ended {kind}"
    code = failure.code if failure is not None else kind.upper()
    raise RequestError(
        INTERNAL_ERROR,
        f"Internal error: turn failed: {message}",
        {"code": code, "sessionId": session_id, "turn": outcome.turn},
    )


def _absolute(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise RequestError(INVALID_PARAMS, f'cwd must be an absolute path, got "{cwd}"', {"cwd": cwd})
    return path


COMPACT_HELP = "Compact this session's history now: a summary replaces older messages"


def _command(blocks: tuple[UserBlock, ...]) -> str | None:
    """The slash command a prompt is, if it is one text block holding only the command."""
    if len(blocks) == 1 and isinstance(blocks[0], TextBlock) and blocks[0].text.strip() == "/compact":
        return "/compact"
    return None


def compact_text(done: Compacted | None) -> str:
    """What `/compact` did, as the agent's answer."""
    if done is None:
        return "Nothing compacts in this deployment."
    said = f"History {done.before} -> {done.after} tokens (estimated)."
    if done.summarised:
        said = f"Compacted: a summary replaced older messages. {said}"
    return f"{said} {done.note}." if done.note else said


def _user_blocks(prompt: Sequence[ContentBlock]) -> tuple[UserBlock, ...]:
    """The user's message: text as it is, a resource link as a Markdown link, an embedded text resource (which
    clients send only with embeddedContext, which dsh does not advertise) as its URI and text."""
    blocks: list[UserBlock] = []
    for block in prompt:
        if isinstance(block, TextContentBlock):
            blocks.append(TextBlock(block.text))
        elif isinstance(block, ResourceContentBlock):
            blocks.append(TextBlock(f"[{block.name}]({block.uri})"))
        elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(
            block.resource, TextResourceContents
        ):
            blocks.append(TextBlock(f"{block.resource.uri}:\n{block.resource.text}"))
        else:
            raise RequestError(
                INVALID_PARAMS,
                f'"{block.type}" prompt content is not supported: dsh takes text and resource links '
                "(promptCapabilities advertises no image, audio or embedded context)",
                {"type": block.type},
            )
    if not blocks:
        raise RequestError(INVALID_PARAMS, "the prompt is empty", {"prompt": []})
    return tuple(blocks)


_Kind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
_ANSWERS: tuple[tuple[str, str, _Kind, str], ...] = (
    ("allow-once", "Allow once", "allow_once", "allowed-once"),
    ("allow-always", "Allow always", "allow_always", "allowed-always"),
    ("reject-once", "Reject", "reject_once", "rejected"),
)
"""The permission options offered (id, name, the protocol's kind) and the approval outcome each means."""
_OPTIONS = tuple((option, name, kind) for option, name, kind, _ in _ANSWERS)


class AcpServer:
    """The ACP agent side of one connection over `host`'s agents. `group` holds the open sessions; `client` is the
    connection to the client (set before the first request is read)."""

    def __init__(self, host: Host, group: TaskGroup, *, version: str) -> None:
        self.host = host
        self.agents = host.ctx.get(AGENTS)
        self.group = group
        self.version = version
        self.client: Client | None = None
        self.sessions: dict[str, _Session] = {}
        self.initialized = False
        self._mcp: McpService | None = host.ctx.get(MCP) if host.ctx.has(MCP) else None
        self._off: Disposer = host.ctx.on(EVENT, self._on_event)
        self._off_ask: Disposer = host.ctx.on(ASK, self._ask)

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    def close(self) -> None:
        """Stop streaming, and let every open session's holder close it (flushing its log) once its turn ends."""
        self._off()
        self._off_ask()
        for session in self.sessions.values():
            session.closed.set()

    # ------------------------------------------------------------------ lifecycle

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        self.initialized = True
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=False),
                # stdio servers need no capability; http and sse are offered when the deployment loads `mcp`
                mcp_capabilities=McpCapabilities(http=self._mcp is not None, sse=self._mcp is not None),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    fork=SessionForkCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            agent_info=Implementation(name=AGENT_NAME, title="dsh", version=self.version),
            auth_methods=[],
        )

    def _attach_mcp(self, session_id: str, servers: Sequence[object] | None) -> None:
        """Connect the client's `mcpServers` for this session (at its first turn), through the mcp plugin."""
        if not servers:
            return
        if self._mcp is None:
            log.warning(
                "ignoring %d MCP server(s) of session %s: the deployment does not load the mcp plugin (use: mcp)",
                len(servers),
                session_id,
            )
            return
        self._mcp.attach(session_id, mcp_specs(servers))

    def _ready(self) -> None:
        if not self.initialized:
            raise RequestError(INVALID_REQUEST, "call initialize first", {"expected": "initialize"})

    def _session(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError(
                INVALID_PARAMS,
                f'no session "{session_id}" is open on this connection: open one with session/new or session/load',
                {"sessionId": session_id},
            )
        return session

    def _stored(self, session_id: str) -> None:
        try:
            self.agents.store.info(session_id)
        except SessionNotFoundError as error:
            raise RequestError(INVALID_PARAMS, str(error), {"sessionId": session_id}) from error

    async def _hold(
        self,
        opened: AbstractAsyncContextManager[Agent],
        *,
        task_status: TaskStatus[_Session] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        async with opened as agent:
            session = self.sessions[agent.id] = _Session(agent)
            try:
                task_status.started(session)
                await session.closed.wait()
                async with session.busy:  # a turn being cancelled finishes writing before the log closes
                    pass
            finally:
                self.sessions.pop(agent.id, None)
                session.gone.set()

    async def _open(self, opened: AbstractAsyncContextManager[Agent]) -> _Session:
        try:
            session: _Session = await self.group.start(self._hold, opened)
        except (
            SessionInUseError
        ) as error:  # another process writes the session: the client may try again later
            data = {"sessionId": error.session_id, "pid": error.pid, "host": error.host}
            raise RequestError(INVALID_REQUEST, str(error), data) from error
        return session

    def _advertise(self, session_id: str) -> None:
        """Tell the client the session's commands (`/compact`, when the deployment compacts), once it has the id."""
        if self.host.ctx.has(COMPACTION):
            commands = [AvailableCommand(name="compact", description=COMPACT_HELP)]
            self.group.start_soon(self._offer, session_id, update_available_commands(commands))

    async def _offer(self, session_id: str, update: SessionUpdate) -> None:
        try:
            await self._send(session_id, update)
        except (ConnectionError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            # the client left right after its session/new: there is no one to offer the commands to
            log.info("available commands for %s not sent: the connection closed", session_id)

    async def _send(self, session_id: str, update: SessionUpdate) -> None:
        assert self.client is not None, "the connection sets the client before it reads a request"
        await self.client.session_update(session_id=session_id, update=update)

    async def _on_event(self, event: AgentEvent) -> None:
        session = self.sessions.get(event.agent.id)
        if session is None:
            return  # not a session of this connection (a subagent, say)
        for update in session.live.updates(event.event):
            await self._send(session.agent.id, update)

    async def _ask(self, value: Approval | None, request: ApprovalRequest, next_: Any) -> Approval | None:
        """An approval a session of this connection needs: `session/request_permission` to the client, with the
        protocol's options (allow once, allow always, reject once); the client's choice is the answer, a cancelled
        request `cancelled`. A call of another session (a subagent's) goes on down the chain."""
        agent = request.context.agent
        session = self.sessions.get(agent.id) if agent is not None else None
        if session is None or self.client is None:
            return await next_(value)  # type: ignore[no-any-return]
        title = f"{request.tool}: {request.reason}" if request.reason else request.tool
        response = await self.client.request_permission(
            session_id=session.agent.id,
            tool_call=ToolCallUpdate(tool_call_id=request.call_id, title=title, status="pending"),
            options=[
                PermissionOption(option_id=option, name=name, kind=kind) for option, name, kind in _OPTIONS
            ],
        )
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome):
            return Approval("cancelled")
        chosen = {option: answer for option, _, _, answer in _ANSWERS}.get(outcome.option_id)
        if chosen is None:
            raise RequestError(
                INVALID_PARAMS,
                f'unknown permission option "{outcome.option_id}"; offered: {", ".join(o for o, _, _ in _OPTIONS)}',
                {"optionId": outcome.option_id},
            )
        return Approval(chosen)  # type: ignore[arg-type]  # one of the outcomes in _ANSWERS

    def _modes(self, session_id: str) -> SessionModeState | None:
        """The session's modes, when the deployment loads the interaction plugin: the permission presets, current
        when the log's last preset is still in force (its sandbox mode and approval policy unchanged since), and
        `custom` otherwise: the settings the deployment gave, or that `/sandbox` and `/approval` set, which no preset
        need match. Never a preset the session is not under."""
        if not self.host.ctx.has(INTERACTION):
            return None
        knobs = self.host.ctx.get(INTERACTION).knobs(self.sessions[session_id].agent.log)
        modes = [SessionMode(id=name, name=name, description=p.description) for name, p in PRESETS.items()]
        chosen = PRESETS.get(knobs.preset or "")
        if chosen is not None and (knobs.sandbox, knobs.policy) == (chosen.sandbox, chosen.approval):
            return SessionModeState(current_mode_id=knobs.preset or "", available_modes=modes)
        custom = SessionMode(id=CUSTOM_MODE, name=CUSTOM_MODE, description=_CUSTOM_HELP)
        return SessionModeState(current_mode_id=CUSTOM_MODE, available_modes=[custom, *modes])

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> SetSessionModeResponse:
        """A mode is a permission preset (`read-only`, `workspace-write`, `danger-full-access`): switched as
        `/permission MODE` is, and logged so (`command/run`, `permission/preset`, ..., `command/done`)."""
        self._ready()
        session = self._session(session_id)
        if mode_id == CUSTOM_MODE:
            raise RequestError(
                INVALID_PARAMS,
                f'"{CUSTOM_MODE}" is what a session is under when no preset is in force; choose a preset: '
                + ", ".join(PRESETS),
                {"modeId": mode_id},
            )
        async with session.busy:
            reply = await self.host.ctx.waterfall(
                SLASH_COMMAND, None, SlashCommand(session.agent, "permission", f" {mode_id}")
            )
        if reply is None:
            raise RequestError(
                INVALID_REQUEST,
                "session modes are permission presets, and this deployment loads no interaction plugin",
            )
        if reply.kind != "success":
            raise RequestError(INVALID_PARAMS, reply.text, {"modeId": mode_id})
        return SetSessionModeResponse()

    # ------------------------------------------------------------------ sessions

    async def new_session(
        self, cwd: str, mcp_servers: Sequence[object] | None = None, **_: Any
    ) -> NewSessionResponse:
        self._ready()
        path = _absolute(cwd)
        session = await self._open(self.agents.create(self.host.options(cwd=path)))
        self._advertise(session.agent.id)
        self._attach_mcp(session.agent.id, mcp_servers)
        return NewSessionResponse(session_id=session.agent.id, modes=self._modes(session.agent.id))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Sequence[object] | None = None, **_: Any
    ) -> LoadSessionResponse:
        """Open a stored session and replay its conversation as updates before answering (ACP session/load)."""
        self._ready()
        await self._resume(session_id, _absolute(cwd), mcp_servers)
        history = SessionUpdates("history", self.sessions[session_id].agent.cwd)
        for event in self.agents.store.events(session_id, skip_types=(AssistantChunk,)):
            for update in history.updates(event):
                await self._send(session_id, update)
        return LoadSessionResponse(modes=self._modes(session_id))

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: Sequence[object] | None = None, **_: Any
    ) -> ResumeSessionResponse:
        """Open a stored session without replaying it (unstable ACP session/resume)."""
        self._ready()
        await self._resume(session_id, _absolute(cwd), mcp_servers)
        return ResumeSessionResponse(modes=self._modes(session_id))

    async def _resume(self, session_id: str, cwd: Path, mcp_servers: Sequence[object] | None) -> None:
        if session_id not in self.sessions:
            self._stored(session_id)
            await self._open(self.agents.resume(session_id, self.host.options(cwd=cwd)))
            self._advertise(session_id)
        self._attach_mcp(session_id, mcp_servers)

    async def fork_session(
        self, session_id: str, cwd: str, mcp_servers: Sequence[object] | None = None, **_: Any
    ) -> ForkSessionResponse:
        """A new session inheriting `session_id`'s log through its last ended turn (unstable ACP session/fork)."""
        self._ready()
        path = _absolute(cwd)
        self._stored(session_id)
        at = last_turn_end(self.agents.store, session_id)
        session = await self._open(self.agents.fork(session_id, self.host.options(cwd=path), at=at))
        self._attach_mcp(session.agent.id, mcp_servers)
        return ForkSessionResponse(session_id=session.agent.id, modes=self._modes(session.agent.id))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        """The stored sessions that have a workspace (all of them, oldest first: no paging), `cwd`'s only if given."""
        self._ready()
        store = self.agents.store
        found: list[SessionInfo] = []
        for info in store.sessions():
            if info.cwd is None or (cwd is not None and info.cwd != cwd):
                continue
            last = store.last_event(info.id)
            when = last.time if last is not None else info.created_at
            updated = datetime.fromtimestamp(when / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
            found.append(SessionInfo(session_id=info.id, cwd=info.cwd, updated_at=updated))
        return ListSessionsResponse(sessions=found)

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        """Cancel the session's running turn and close it (unstable ACP session/close)."""
        self._ready()
        session = self._session(session_id)
        if session.turn is not None:
            session.turn.cancel()
        session.closed.set()
        await session.gone.wait()
        return CloseSessionResponse()

    # ------------------------------------------------------------------ turns

    async def prompt(self, session_id: str, prompt: Sequence[ContentBlock], **_: Any) -> PromptResponse:
        self._ready()
        session = self._session(session_id)
        blocks = _user_blocks(prompt)
        if session.closed.is_set():
            raise RequestError(
                INVALID_REQUEST, f'session "{session_id}" is closing', {"sessionId": session_id}
            )
        if session.turn is not None or session.busy.locked():
            raise RequestError(
                INVALID_REQUEST,
                f'session "{session_id}" is already running a prompt; cancel it or wait for its response',
                {"sessionId": session_id},
            )
        if _command(blocks) == "/compact":
            async with session.busy:
                done = await session.agent.ctx.waterfall(COMPACT, None, CompactRequest(session.agent))
            await self._send(session_id, update_agent_message_text(compact_text(done)))
            return PromptResponse(stop_reason="end_turn")
        # The scope is in place before anything awaits, so a session/cancel that arrives at once still lands.
        scope = session.turn = anyio.CancelScope()
        outcome: TurnOutcome | None = None
        try:
            with scope:
                async with session.busy:
                    outcome = await session.agent.run(blocks)
        finally:
            session.turn = None
        if outcome is None:
            return PromptResponse(stop_reason="cancelled")
        return PromptResponse(stop_reason=stop_reason(outcome, session_id))

    async def cancel(self, session_id: str, **_: Any) -> None:
        """Cancel the running turn; its prompt then answers `cancelled`. Nothing runs: nothing to do."""
        session = self.sessions.get(session_id)
        if session is None:
            log.warning("session/cancel for %r, which is not open on this connection: ignored", session_id)
            return
        if session.turn is not None:
            session.turn.cancel()


_SERVER_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def mcp_specs(servers: Sequence[object]) -> dict[str, ServerSpec]:
    """ACP's `mcpServers` (stdio, http, sse) as the mcp plugin's server specs, by name (a name made of characters a
    tool name cannot hold has them replaced by `_`); an entry of another kind is an invalid-params error."""
    specs: dict[str, ServerSpec] = {}
    for index, server in enumerate(servers):
        name = _SERVER_NAME_CHARS.sub("_", str(getattr(server, "name", "") or f"server{index + 1}"))[:48]
        if isinstance(server, McpServerStdio):
            specs[name] = StdioServer(
                command=server.command,
                args=tuple(server.args),
                env={variable.name: variable.value for variable in server.env},
            )
        elif isinstance(server, HttpMcpServer | SseMcpServer):
            specs[name] = HttpServer(
                type="sse" if isinstance(server, SseMcpServer) else "http",
                url=server.url,
                headers={header.name: header.value for header in server.headers},
            )
        else:
            raise RequestError(
                INVALID_PARAMS,
                f"mcpServers[{index}] is a {type(server).__name__}; dsh connects stdio, http and sse servers",
                {"index": index},
            )
    return specs
