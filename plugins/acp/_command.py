"""`dsh acp`: serve a deployment's agent over the Agent Client Protocol on stdin/stdout (JSON-RPC only on stdout;
logs on stderr), and `serve`, the same over any byte stream pair. When the client closes its end, every request
already received is still answered (a running prompt, cancelled, answers `cancelled`) before the server stops."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, cast

import anyio
from acp import Agent
from acp.agent.connection import AgentSideConnection
from anyio.abc import ByteReceiveStream, ByteSendStream

from dsh.runtime.about import version
from dsh.runtime.host import ConfigOption, Host, ReplayOption, StoreOption, open_host
from dsh.runtime.jsonlines import JsonLinesTransport

from ._server import AcpServer
from ._transport import reserve_stdout, stdio_streams

__all__ = ["ANSWER_GRACE_S", "acp_command", "serve"]

log = logging.getLogger("dsh.acp")

ANSWER_GRACE_S = 10.0
"""How long, once the client's input has ended, the requests it sent may take to answer before they are dropped."""


class _Answering:
    """The transport, counting the requests received and not yet answered, so the end of input can wait for them."""

    def __init__(self, inner: JsonLinesTransport) -> None:
        self._inner = inner
        self._unanswered: set[object] = set()
        self._answered = anyio.Event()

    @property
    def unanswered(self) -> int:
        return len(self._unanswered)

    async def send(self, message: dict[str, Any]) -> None:
        await self._inner.send(message)
        if "method" not in message and "id" in message:
            self._unanswered.discard(message["id"])
            if not self._unanswered:
                self._answered.set()

    async def receive(self) -> dict[str, Any] | None:
        message = await self._inner.receive()
        if message is not None and "method" in message and "id" in message:
            self._unanswered.add(message["id"])
            self._answered = anyio.Event()
        return message

    async def close(self) -> None:
        await self._inner.close()

    async def answered(self) -> None:
        """Wait until every request received has been answered."""
        if self._unanswered:
            await self._answered.wait()


async def serve(host: Host, receive: ByteReceiveStream, send: ByteSendStream) -> None:
    """Serve ACP on `receive`/`send` until the client closes its end; then running turns are cancelled (logged
    aborted), every request received is answered (for up to `ANSWER_GRACE_S`), and every open session's log is
    flushed and closed."""
    transport = _Answering(JsonLinesTransport(receive, send, answer=True, name="client"))
    async with anyio.create_task_group() as group:
        server = AcpServer(host, group, version=version())
        # The SDK types its agent as the full `acp.Agent` protocol; the router answers the methods AcpServer does
        # not define (modes, config options, authentication) with "method not found".
        conn = AgentSideConnection(
            cast(Agent, server), transport, listening=False, use_unstable_protocol=True
        )
        try:
            await conn.listen()
            for session in server.sessions.values():
                if session.turn is not None:
                    session.turn.cancel()
            with anyio.move_on_after(ANSWER_GRACE_S) as waited:
                await transport.answered()
            if waited.cancelled_caught:
                log.warning(
                    "the client's input ended; %d request(s) still unanswered after %.0f s are dropped",
                    transport.unanswered,
                    ANSWER_GRACE_S,
                )
        finally:
            with anyio.CancelScope(shield=True):
                server.close()
                await conn.close()


async def _serve_stdio(config: Path | None, store: str | None, replay: Path | None) -> None:
    protocol_out = reserve_stdout()  # before the deployment loads: whatever its plugins print goes to stderr
    with open_host(config, store, replay=replay) as host:
        receive, send = await stdio_streams(protocol_out)
        await serve(host, receive, send)


def acp_command(
    config: ConfigOption = None,
    store: StoreOption = None,
    replay: ReplayOption = None,
) -> None:
    """Serve the deployment's agent to an editor over the Agent Client Protocol, on stdin and stdout.

    stdout carries only JSON-RPC; logs go to stderr. Each ACP session is a stored dsh session: session/load replays one, and the client's cwd is the session's workspace ({{cwd}}).

    Example: dsh acp --config acp-agent --store ~/.local/share/dsh/sessions.db
    """
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="dsh acp: %(levelname)s %(name)s: %(message)s"
    )
    anyio.run(_serve_stdio, config, store, replay)
