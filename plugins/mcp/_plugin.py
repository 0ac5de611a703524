"""The `mcp` plugin and its service: which MCP servers each session has (the deployment's `servers:`, the
workspace's `.mcp.json` when `project_config` allows it, and those an ACP client passed in `session/new`), and
when they start: at the first turn of a session, in the background of its root agent, so they close with it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from anyio.abc import TaskStatus

from dsh.runtime.agent import EVENT, AgentEvent
from dsh.runtime.kernel import ConfigError, Context, Plugin, ServiceKey
from dsh.runtime.session import TurnStart
from dsh.runtime.tools import TOOL_ENV, TOOLS

from ._config import McpConfig, ServerSpec, parse_servers, read_project_servers
from ._servers import ServerStatus, SessionServers

if TYPE_CHECKING:
    from dsh.runtime.agent import Agent

__all__ = ["MCP", "McpService", "plugin"]

log = logging.getLogger("dsh.mcp")


class McpService:
    """The MCP servers of every open session of this host."""

    def __init__(self, ctx: Context, config: McpConfig) -> None:
        self._ctx = ctx
        self._config = config
        self._specs = parse_servers(config.servers, where="servers")
        self._attached: dict[str, dict[str, ServerSpec]] = {}
        self._sessions: dict[str, SessionServers] = {}

    def attach(self, session_id: str, servers: Mapping[str, ServerSpec]) -> None:
        """Give session `session_id` more servers (an ACP client's `mcpServers`): they start with its first turn,
        or at once if its servers are already running."""
        self._attached.setdefault(session_id, {}).update(servers)
        running = self._sessions.get(session_id)
        if running is not None:
            running.add(servers)

    def status(self, session_id: str) -> dict[str, ServerStatus]:
        """Each server of the session `session_id` (or of the session whose subagent it is) by name."""
        running = self._sessions.get(session_id)
        return {} if running is None else {name: s.status for name, s in running.servers.items()}

    def _session_specs(self, root: Agent, workspace: Path) -> dict[str, ServerSpec]:
        specs: dict[str, ServerSpec] = {}
        if self._config.project_config:
            specs.update(read_project_servers(workspace))
        specs.update(self._specs)  # the deployment's own win over the project's
        specs.update(self._attached.get(root.id, {}))
        return specs

    async def connect(self, agent: Agent) -> None:
        """Make sure the session of `agent` has its servers running and their tools in `agent`'s scope; with
        `start: session`, return once each has connected or failed once."""
        root = agent
        while root.parent is not None:
            root = root.parent
        running = self._sessions.get(root.id)
        if running is None:
            workspace = (root.cwd or Path.cwd()).absolute()
            try:
                specs = self._session_specs(root, workspace)
            except ConfigError as error:
                log.error("MCP servers of session %s: %s", root.id, error)
                specs = dict(self._specs) | self._attached.get(root.id, {})
            if not specs:
                return
            running = self._sessions[root.id] = SessionServers(self._ctx, self._config, root, workspace)
            try:
                await root.start_background(self._hold, running, specs)
            except BaseException:
                self._sessions.pop(root.id, None)
                raise
        running.mount(agent)
        if self._config.start == "session":
            await running.settled()

    async def _hold(
        self, running: SessionServers, specs: dict[str, ServerSpec], *, task_status: TaskStatus[None]
    ) -> None:
        try:
            await running.run(specs, task_status=task_status)
        finally:
            if self._sessions.get(running.root.id) is running:
                del self._sessions[running.root.id]
            self._attached.pop(running.root.id, None)

    async def on_event(self, event: AgentEvent) -> None:
        if isinstance(event.event.view(), TurnStart):
            await self.connect(event.agent)


MCP = ServiceKey[McpService]("mcp")


def _apply(ctx: Context, config: McpConfig) -> None:
    service = McpService(ctx, config)
    ctx.provide(MCP, service)
    ctx.on(EVENT, service.on_event)


plugin = Plugin(
    name="mcp",
    apply=_apply,
    config=McpConfig,
    needs=(TOOLS, TOOL_ENV),
    provides=(MCP,),
    description="MCP tool servers: each server tool as a dsh tool mcp__<server>__<tool>, per session",
)
