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
from typing import Any

import anyio
from acp import PROTOCOL_VERSION, Client, RequestError
from acp.schema import (
    AgentCapabilities,
    AudioContentBlock,
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
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SseMcpServer,
    StopReason,
    TextContentBlock,
    TextResourceContents,
)
from anyio.abc import TaskGroup, TaskStatus

from dsh.plugins.mcp import MCP, HttpServer, McpService, ServerSpec, StdioServer
from dsh.runtime.agent import AGENTS, EVENT, Agent, AgentEvent, TurnOutcome, last_turn_end
from dsh.runtime.host import Host
from dsh.runtime.kernel import Disposer
from dsh.runtime.llm import TextBlock, UserBlock
from dsh.runtime.session import SessionInUseError, SessionNotFoundError

from ._updates import SessionUpdate, SessionUpdates

__all__ = [
    "AGENT_NAME",
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

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    def close(self) -> None:
        """Stop streaming, and let every open session's holder close it (flushing its log) once its turn ends."""
        self._off()
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

    async def _send(self, session_id: str, update: SessionUpdate) -> None:
        assert self.client is not None, "the connection sets the client before it reads a request"
        await self.client.session_update(session_id=session_id, update=update)

    async def _on_event(self, event: AgentEvent) -> None:
        session = self.sessions.get(event.agent.id)
        if session is None:
            return  # not a session of this connection (a subagent, say)
        for update in session.live.updates(event.event):
            await self._send(session.agent.id, update)

    # ------------------------------------------------------------------ sessions

    async def new_session(
        self, cwd: str, mcp_servers: Sequence[object] | None = None, **_: Any
    ) -> NewSessionResponse:
        self._ready()
        path = _absolute(cwd)
        session = await self._open(self.agents.create(self.host.options(cwd=path)))
        self._attach_mcp(session.agent.id, mcp_servers)
        return NewSessionResponse(session_id=session.agent.id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Sequence[object] | None = None, **_: Any
    ) -> LoadSessionResponse:
        """Open a stored session and replay its conversation as updates before answering (ACP session/load)."""
        self._ready()
        await self._resume(session_id, _absolute(cwd), mcp_servers)
        history = SessionUpdates("history", self.sessions[session_id].agent.cwd)
        for event in self.agents.store.events(session_id, skip_types=("assistant/chunk",)):
            for update in history.updates(event):
                await self._send(session_id, update)
        return LoadSessionResponse()

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: Sequence[object] | None = None, **_: Any
    ) -> ResumeSessionResponse:
        """Open a stored session without replaying it (unstable ACP session/resume)."""
        self._ready()
        await self._resume(session_id, _absolute(cwd), mcp_servers)
        return ResumeSessionResponse()

    async def _resume(self, session_id: str, cwd: Path, mcp_servers: Sequence[object] | None) -> None:
        if session_id not in self.sessions:
            self._stored(session_id)
            await self._open(self.agents.resume(session_id, self.host.options(cwd=cwd)))
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
        return ForkSessionResponse(session_id=session.agent.id)

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
