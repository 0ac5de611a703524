"""`ProcessTransport`: the client side of ACP's stdio framing over an agent process's pipes, one JSON-RPC message
per line, for the agent-client-protocol SDK's connection. Lines that are not JSON-RPC (an agent printing to
stdout) are logged and skipped, never answered: the agent owns its side of the conversation."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["MAX_LINE", "ProcessTransport"]

MAX_LINE = 50 * 1024 * 1024  # the longest line read: an answer may carry whole files

log = logging.getLogger("dsh.subagent_acp")


class ProcessTransport:
    """The SDK's `Transport` over an agent's stdin (`send`) and stdout (`receive`; None once stdout ends)."""

    def __init__(self, stdin: ByteSendStream, stdout: ByteReceiveStream) -> None:
        self._stdin = stdin
        self._stdout = BufferedByteReceiveStream(stdout)
        self._lock = anyio.Lock()
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        async with self._lock:
            if self._closed:
                raise ConnectionError("the agent's stdin is closed")
            try:
                await self._stdin.send(line.encode("utf-8"))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as error:
                raise ConnectionError(f"the agent's stdin is closed: {error}") from error

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self._stdout.receive_until(b"\n", MAX_LINE)
            except (
                anyio.EndOfStream,
                anyio.IncompleteRead,
                anyio.ClosedResourceError,
                anyio.BrokenResourceError,
            ):
                return (
                    None  # stdout ended (the agent exited or closed it): the connection fails what is pending
                )
            except anyio.DelimiterNotFound:
                log.warning(
                    "the ACP agent wrote a line longer than %d bytes; the connection is closed", MAX_LINE
                )
                return None
            text = line.strip()
            if not text:
                continue
            try:
                message = json.loads(text)
            except (ValueError, UnicodeDecodeError):
                # Skipped, not answered: an agent that prints to stdout breaks only its own messages.
                log.warning("skipped a line of the ACP agent's stdout that is not JSON: %.200r", text)
                continue
            if isinstance(message, dict):
                return message
            log.warning(
                "skipped a line of the ACP agent's stdout that is not a JSON-RPC message: %.200r", text
            )

    async def close(self) -> None:
        # Not under the lock: a send blocked on a full pipe (an agent that stopped reading) must not keep stdin open.
        if not self._closed:
            self._closed = True
            await self._stdin.aclose()
