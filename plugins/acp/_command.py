"""`dsh acp`: serve a deployment's agent over the Agent Client Protocol on stdin/stdout (JSON-RPC only on stdout;
logs on stderr), and `serve`, the same over any byte stream pair."""

from __future__ import annotations

import logging
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import cast

import anyio
from acp import Agent
from acp.agent.connection import AgentSideConnection
from anyio.abc import ByteReceiveStream, ByteSendStream

from runtime.cli import ConfigOption, Host, ReplayOption, StoreOption, open_host
from runtime.jsonlines import JsonLinesTransport

from ._server import AcpServer
from ._transport import stdio_streams

__all__ = ["acp_command", "serve"]


def _version() -> str:
    try:
        return version("dsh")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


async def serve(host: Host, receive: ByteReceiveStream, send: ByteSendStream) -> None:
    """Serve ACP on `receive`/`send` until the client closes its end; then running turns are cancelled (logged
    aborted) and every open session's log is flushed and closed."""
    transport = JsonLinesTransport(receive, send, answer=True, name="client")
    async with anyio.create_task_group() as group:
        server = AcpServer(host, group, version=_version())
        # The SDK types its agent as the full `acp.Agent` protocol; the router answers the methods AcpServer does
        # not define (modes, config options, authentication) with "method not found".
        conn = AgentSideConnection(
            cast(Agent, server), transport, listening=False, use_unstable_protocol=True
        )
        try:
            await conn.listen()
        finally:
            with anyio.CancelScope(shield=True):
                server.close()
                await conn.close()


async def _serve_stdio(config: Path | None, store: str | None, replay: Path | None) -> None:
    with open_host(config, store, replay=replay) as host:
        receive, send = await stdio_streams()
        await serve(host, receive, send)


def acp_command(
    config: ConfigOption = None,
    store: StoreOption = None,
    replay: ReplayOption = None,
) -> None:
    """Serve the deployment's agent to an editor over the Agent Client Protocol, on stdin and stdout.

    stdout carries only JSON-RPC; logs go to stderr. Each ACP session is a stored dsh session: session/load replays one, and the client's cwd is the session's workspace ({{cwd}}).

    Example: dsh acp --config examples/acp-agent.yml --store ~/.local/share/dsh/sessions.db
    """
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="dsh acp: %(levelname)s %(name)s: %(message)s"
    )
    anyio.run(_serve_stdio, config, store, replay)
