"""The MCP servers of one session, each kept connected by a task in the background of the session's root agent: a
server's tools are registered (as `mcp__<server>__<tool>`) in the scope of every agent of the session while it is
connected, re-registered when it says its tool list changed, and removed when it goes; a server that exits or
stops answering is started again after a backoff that doubles up to a cap. A call is bounded by a timeout and
cancelled with the calling turn; a failure is an error result that names the server."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.shared.exceptions import MCPError

from dsh.runtime.kernel import Context, Disposer, Waterfall
from dsh.runtime.tools import TOOL_ENV, TOOLS, Tool, ToolContext, ToolResult

from ._config import McpConfig, ServerSpec, StdioServer
from ._link import Connector, Link, LinkError, ListedTool, ServerRef, live_connector

if TYPE_CHECKING:
    from dsh.runtime.agent import Agent

__all__ = [
    "CONNECT",
    "MCP_ERROR",
    "MCP_SERVER_FAILED",
    "MCP_SERVER_UNAVAILABLE",
    "ServerStatus",
    "SessionServers",
]

log = logging.getLogger("dsh.mcp")

CONNECT = Waterfall[Connector, ServerRef]("mcp/connect")
"""How a server is connected: the value is the live connector, the argument the server. Replay answers with a
connector that serves the recording's tools when none of the server's tools runs live."""

MCP_SERVER_UNAVAILABLE = "MCP_SERVER_UNAVAILABLE"
MCP_SERVER_FAILED = "MCP_SERVER_FAILED"
MCP_ERROR = "MCP_ERROR"

_PROBE_S = 5.0
"""After a call times out, how long the server has to answer a ping before it counts as hung (and is restarted)."""


@dataclass
class ServerStatus:
    """What one server of a session is doing: connected or not, its tools (model-facing names), why it last
    failed, the tools refused because their name was taken, and how many times it was (re)started."""

    connected: bool = False
    tools: list[str] = field(default_factory=list)
    failure: str | None = None
    refused: list[str] = field(default_factory=list)
    starts: int = 0


class _Server:
    def __init__(self, name: str, spec: ServerSpec, owner: SessionServers) -> None:
        self.name = name
        self.spec = spec
        self.owner = owner
        self.link: Link | None = None
        self.listed: list[ListedTool] = []
        self.status = ServerStatus()
        self.settled = anyio.Event()  # the first attempt connected or failed
        self._changed = anyio.Event()
        self._registered: dict[int, tuple[Context, list[Disposer]]] = {}

    # ------------------------------------------------------------------ connection

    def _notify(self) -> None:
        self._changed.set()  # the server's tool list changed: `_serve` re-lists it

    def _ref(self) -> ServerRef:
        owner = self.owner
        env: dict[str, str] = {}
        if isinstance(self.spec, StdioServer):
            env = owner.ctx.get(TOOL_ENV).child_env(os.environ, owner.config.env.policy())
        return ServerRef(self.name, self.spec, owner.workspace, env)

    async def _hold(
        self, connector: Connector, ref: ServerRef, stop: anyio.Event, *, task_status: TaskStatus[Link]
    ) -> None:
        async with connector(ref, self._notify) as link:
            task_status.started(link)
            await stop.wait()

    async def run(self) -> None:
        """Connect, serve, and start again after a failure, until the session closes (cancellation)."""
        config = self.owner.config
        backoff = config.restart_backoff_s
        while True:
            self.status.starts += 1
            stop = anyio.Event()
            try:
                ref = self._ref()
                connector = await self.owner.ctx.waterfall(CONNECT, live_connector, ref)
                async with anyio.create_task_group() as group:
                    with anyio.fail_after(config.connect_timeout_s):
                        link = await group.start(self._hold, connector, ref, stop)
                        self._set_tools(await link.tools())
                    self.link = link
                    self.status.connected, self.status.failure = True, None
                    self.settled.set()
                    log.info('MCP server "%s" connected: %d tools', self.name, len(self.listed))
                    up_since = anyio.current_time()
                    await self._serve(link)
                    if anyio.current_time() - up_since > config.max_backoff_s:
                        backoff = (
                            config.restart_backoff_s
                        )  # it ran a while: a fresh failure, not a crash loop
                    diagnosis = link.diagnosis()
                    stop.set()
                failure = "exited" if isinstance(self.spec, StdioServer) else "closed the connection"
                if diagnosis:
                    failure += f"; its stderr ended with:\n{diagnosis}"
            except Exception as error:
                # Contained: a server that cannot be reached is the session's information, never its crash.
                if _only(error, TimeoutError):
                    failure = f"did not connect within {config.connect_timeout_s:g}s"
                else:
                    failure = f"could not be connected: {_describe(error)}"
            finally:
                self.link = None
                self.status.connected = False
                self._set_tools([])
            self.status.failure = failure
            self.settled.set()
            log.warning('MCP server "%s" %s; starting it again in %gs', self.name, failure, backoff)
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, config.max_backoff_s)

    async def _serve(self, link: Link) -> None:
        """Until the connection ends: re-list the tools each time the server says they changed."""
        async with anyio.create_task_group() as group:

            async def refresh() -> None:
                while True:
                    await self._changed.wait()
                    self._changed = anyio.Event()
                    try:
                        with anyio.fail_after(self.owner.config.connect_timeout_s):
                            self._set_tools(await link.tools())
                    except (TimeoutError, MCPError, LinkError) as error:
                        log.warning('MCP server "%s": re-listing its tools failed: %s', self.name, error)
                        link.closed.set()

            group.start_soon(refresh)
            await link.closed.wait()
            group.cancel_scope.cancel()

    # ------------------------------------------------------------------ tools

    def _set_tools(self, listed: Sequence[ListedTool]) -> None:
        self.listed = list(listed)
        for key in list(self._registered):
            self._unmount_key(key)
        for ctx in self.owner.mounted():
            self.mount(ctx)

    def mount(self, ctx: Context) -> None:
        """Register this server's tools in `ctx`'s scope (refusing a name another tool holds there)."""
        if ctx.disposed or not self.listed:
            return
        tools = ctx.get(TOOLS)
        disposers: list[Disposer] = []
        refused: list[str] = []
        seen: set[str] = set()
        for listed in self.listed:
            existing = tools.get(listed.name)
            if listed.name in seen or existing is not None:
                what = "another tool of this server" if listed.name in seen else "a tool dsh already has"
                refused.append(listed.name)
                log.error(
                    'MCP server "%s": tool "%s" is not registered: its name %s is taken by %s; rename the server '
                    "(its name is part of each tool name) or remove the other tool",
                    self.name,
                    listed.raw,
                    listed.name,
                    what,
                )
                continue
            seen.add(listed.name)
            disposers.append(tools.register(self._tool(listed)))
        self.status.refused = refused
        self.status.tools = sorted(seen)
        self._registered[id(ctx)] = (ctx, disposers)

    def _unmount_key(self, key: int) -> None:
        _, disposers = self._registered.pop(key)
        for dispose in reversed(disposers):
            dispose()

    def unmount(self, ctx: Context) -> None:
        if id(ctx) in self._registered:
            self._unmount_key(id(ctx))

    def _tool(self, listed: ListedTool) -> Tool:
        async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            return await self.call(listed.raw, arguments)

        parameters = dict(listed.parameters)
        parameters.setdefault("type", "object")
        return Tool(
            name=listed.name,
            description=listed.description,
            parameters=parameters,
            execute=execute,
            hermetic=False,  # another process's answer: a replay serves the recorded result
        )

    async def call(self, raw: str, arguments: dict[str, Any]) -> ToolResult:
        """Call tool `raw`; every failure is an error result naming this server."""
        link = self.link
        if link is None:
            why = f": it {self.status.failure}" if self.status.failure else ""
            return ToolResult.error(
                MCP_SERVER_UNAVAILABLE,
                f'MCP server "{self.name}" is not connected{why}; dsh is starting it again, try later',
            )
        timeout = self.owner.config.call_timeout_s
        try:
            return await link.call(raw, arguments, timeout)
        except LinkError as error:
            if not error.lost and not await _answers(link):
                link.closed.set()  # hung: restart it
            text = f'MCP server "{self.name}" {error} while running tool "{raw}"'
            if error.lost or link.closed.is_set():
                diagnosis = link.diagnosis()
                if diagnosis:
                    text += f"; its stderr ended with:\n{diagnosis}"
                text += "\ndsh is starting the server again"
            return ToolResult.error(MCP_SERVER_FAILED, text)
        except MCPError as error:
            return ToolResult.error(
                MCP_ERROR,
                f'MCP server "{self.name}" answered tools/call "{raw}" with error {error.code}: {error.message}',
            )
        except Exception as error:
            # Contained: a transport failure is this server's, said with its name; the connection is started again.
            link.closed.set()
            return ToolResult.error(
                MCP_SERVER_FAILED,
                f'MCP server "{self.name}" failed while running tool "{raw}": {_describe(error)}\n'
                "dsh is starting the server again",
            )


async def _answers(link: Link) -> bool:
    ping = getattr(link, "session", None)
    if ping is None:
        return True
    with anyio.move_on_after(_PROBE_S):
        try:
            await ping.send_ping()
        except Exception:
            # Contained: a failed ping is the answer we asked for (the server is gone or broken).
            return False
        return True
    return False


def _only(error: BaseException, kind: type[BaseException]) -> bool:
    """Whether `error` is `kind`, or a group of nothing else."""
    if isinstance(error, BaseExceptionGroup):
        return all(_only(inner, kind) for inner in error.exceptions)
    return isinstance(error, kind)


def _describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        return _describe(error.exceptions[0])
    return f"{type(error).__name__}: {error}"


class SessionServers:
    """The servers of one session (its root agent): started in the root agent's background, mounted in the scope
    of every agent of the session (the root and its subagents)."""

    def __init__(self, ctx: Context, config: McpConfig, root: Agent, workspace: Path) -> None:
        self.ctx = ctx
        self.config = config
        self.root = root
        self.workspace = workspace
        self.servers: dict[str, _Server] = {}
        self._mounts: dict[int, Context] = {}
        self._group: TaskGroup | None = None

    def mounted(self) -> list[Context]:
        for key in [key for key, ctx in self._mounts.items() if ctx.disposed]:
            del self._mounts[key]
        return list(self._mounts.values())

    def mount(self, agent: Agent) -> None:
        if id(agent.ctx) in self._mounts:
            return
        self._mounts[id(agent.ctx)] = agent.ctx
        for server in self.servers.values():
            server.mount(agent.ctx)

    def add(self, specs: Mapping[str, ServerSpec]) -> None:
        """Start `specs`' servers (a name already running is kept)."""
        assert self._group is not None, "servers are added once the session's task has started"
        for name, spec in specs.items():
            if name in self.servers:
                continue
            server = self.servers[name] = _Server(name, spec, self)
            self._group.start_soon(server.run)

    async def settled(self) -> None:
        """Return once every server has connected or failed once."""
        for server in list(self.servers.values()):
            await server.settled.wait()

    async def run(self, specs: Mapping[str, ServerSpec], *, task_status: TaskStatus[None]) -> None:
        """The session's task: its servers run in its task group until the root agent closes."""
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                self.add(specs)
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._group = None
            for server in self.servers.values():
                for ctx in list(self._mounts.values()):
                    server.unmount(ctx)
