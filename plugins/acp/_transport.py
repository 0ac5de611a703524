"""ACP's stdio as anyio byte streams for the one JSON-lines transport (`dsh.runtime.jsonlines.JsonLinesTransport`, which
frames and bounds what is read): a pipe, socket or terminal through asyncio's pipe transports, and anything else (a
regular file, `/dev/null`: what CI, nohup and systemd give), which those refuse, by plain reads and writes
(`dsh acp < requests.jsonl > answers.jsonl`): such a file never makes a read or a write wait, and `/dev/null` reads
as the end of input at once."""

from __future__ import annotations

import asyncio
import os
import stat
import sys

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["reserve_stdout", "stdio_streams"]


class _PipeIn(ByteReceiveStream):
    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._reader.read(max_bytes)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        """stdin is the process's: nothing to close."""


class _Backpressure(asyncio.BaseProtocol):
    """Open while the pipe takes more; closed between pause_writing and resume_writing."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.open.set()

    def pause_writing(self) -> None:
        self.open.clear()

    def resume_writing(self) -> None:
        self.open.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.open.set()  # a send after this fails in the transport, never waits forever


class _PipeOut(ByteSendStream):
    def __init__(self, transport: asyncio.WriteTransport, protocol: _Backpressure) -> None:
        self._transport, self._protocol = transport, protocol

    async def send(self, item: bytes) -> None:
        self._transport.write(item)
        await self._protocol.open.wait()

    async def aclose(self) -> None:
        self._transport.close()


class _FileIn(ByteReceiveStream):
    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = os.read(self._fd, max_bytes)
        if not data:
            raise anyio.EndOfStream
        await anyio.lowlevel.checkpoint()
        return data

    async def aclose(self) -> None:
        """stdin is the process's: nothing to close."""


class _FileOut(ByteSendStream):
    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            view = view[os.write(self._fd, view) :]
        await anyio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        """stdout is the process's: nothing to close."""


def _plain(fd: int) -> bool:
    """Whether `fd` is read and written plainly: not a pipe, socket or terminal (the only kinds asyncio's pipe
    transports can wait on; a regular file or a device such as /dev/null never makes a read or a write wait)."""
    mode = os.fstat(fd).st_mode
    return not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd))


def reserve_stdout() -> int:
    """Keep this process's stdout for the protocol alone: a private descriptor of it is returned (for
    `stdio_streams`), and file descriptor 1 (and so `sys.stdout`, `print`, C code and child processes that inherit
    it) goes to stderr from now on, so nothing a plugin prints, at import or later, reaches the client's stream."""
    sys.stdout.flush()  # what was printed through sys.stdout before goes first
    stdout = sys.stdout.fileno()
    reserved = os.dup(stdout)  # not inherited by child processes (Python's descriptors are non-inheritable)
    os.dup2(sys.stderr.fileno(), stdout)
    return reserved


async def stdio_streams(stdout: int | None = None) -> tuple[ByteReceiveStream, ByteSendStream]:
    """This process's stdin and stdout (or `stdout`, a descriptor from `reserve_stdout`) as anyio byte streams
    (asyncio backend, as `dsh` runs)."""
    loop = asyncio.get_running_loop()
    stdin = sys.stdin.fileno()
    out = sys.stdout if stdout is None else os.fdopen(stdout, "wb", buffering=0, closefd=False)
    stdout = out.fileno()
    receive: ByteReceiveStream
    if _plain(stdin):
        receive = _FileIn(stdin)
    else:
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        receive = _PipeIn(reader)
    sys.stdout.flush()  # what was printed through sys.stdout goes first
    if _plain(stdout):
        return receive, _FileOut(stdout)
    transport, protocol = await loop.connect_write_pipe(_Backpressure, out)
    return receive, _PipeOut(transport, protocol)
