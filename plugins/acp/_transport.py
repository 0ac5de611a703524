"""ACP's stdio as anyio byte streams: the process's stdin and stdout (the SDK's asyncio pipes) wrapped for the one
JSON-lines transport, `runtime.jsonlines.JsonLinesTransport`, which frames and bounds what is read."""

from __future__ import annotations

import asyncio

import anyio
from acp import stdio_streams as _sdk_stdio_streams
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["stdio_streams"]


class _Stdin(ByteReceiveStream):
    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._reader.read(max_bytes)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        """stdin is the process's: nothing to close."""


class _Stdout(ByteSendStream):
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def send(self, item: bytes) -> None:
        self._writer.write(item)
        await self._writer.drain()

    async def aclose(self) -> None:
        self._writer.close()


async def stdio_streams() -> tuple[ByteReceiveStream, ByteSendStream]:
    """This process's stdin and stdout as anyio byte streams (asyncio backend, as `dsh` runs)."""
    reader, writer = await _sdk_stdio_streams()
    return _Stdin(reader), _Stdout(writer)
