"""`LineTransport`: JSON-RPC 2.0 messages as newline-delimited JSON on a byte stream pair (ACP's stdio framing). It
answers what is not a JSON-RPC message itself (-32700 for a line that is not JSON, -32600 for JSON that is not a
request, notification or response), so the ACP connection above it only ever sees well-formed messages and a bad
line never stops the server."""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol

import anyio

__all__ = ["INVALID_REQUEST", "PARSE_ERROR", "LineTransport", "invalid_reason"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

log = logging.getLogger("dsh.acp")


class ByteReader(Protocol):
    """What the transport reads from (an asyncio StreamReader): `readline()` returns b"" at end of input and raises
    ValueError for a line longer than the reader's limit."""

    async def readline(self) -> bytes: ...


class ByteWriter(Protocol):
    """What the transport writes to (an asyncio StreamWriter)."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


def _valid_id(value: object) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def invalid_reason(message: object) -> str | None:
    """Why `message` is not a JSON-RPC 2.0 request, notification or response (None: it is one)."""
    if not isinstance(message, dict):
        kind = (
            "an array (batches are not part of ACP)" if isinstance(message, list) else type(message).__name__
        )
        return f"a JSON-RPC message is a JSON object, got {kind}"
    if message.get("jsonrpc") != "2.0":
        return 'a JSON-RPC message has "jsonrpc": "2.0"'
    if "id" in message and not _valid_id(message["id"]):
        return '"id" must be a string, an integer or null'
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        if "params" in message and not isinstance(message["params"], dict | list):
            return '"params" must be an object or an array'
        return None
    if "id" in message and ("result" in message) != ("error" in message):
        return None  # a response to a request of ours
    return 'a request has "method"; a response has "id" and one of "result" or "error"'


class LineTransport:
    """The `acp` Transport over `reader`/`writer`: `receive()` yields the next well-formed message (None at end of
    input), `send()` writes one message per line; writes never interleave."""

    def __init__(self, reader: ByteReader, writer: ByteWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = anyio.Lock()
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        async with self._lock:
            if self._closed:
                raise ConnectionError("the ACP transport is closed")
            self._writer.write(line.encode("utf-8"))
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self._reader.readline()
            except (
                ValueError
            ) as error:  # longer than the reader's limit: the line is dropped, the next one read
                await self._error(None, PARSE_ERROR, "Parse error", f"the line is too long: {error}")
                continue
            if not line:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError) as error:
                await self._error(None, PARSE_ERROR, "Parse error", f"not JSON: {error}")
                continue
            reason = invalid_reason(message)
            if reason is None:
                return dict(message)
            ident = message.get("id") if isinstance(message, dict) and _valid_id(message.get("id")) else None
            await self._error(ident, INVALID_REQUEST, "Invalid request", reason)

    async def _error(self, ident: object, code: int, text: str, details: str) -> None:
        log.warning("answered a malformed message with %d: %s", code, details)
        error = {"code": code, "message": text, "data": {"details": details}}
        await self.send({"jsonrpc": "2.0", "id": ident, "error": error})

    async def close(self) -> None:
        async with self._lock:
            if not self._closed:
                self._closed = True
                self._writer.close()
