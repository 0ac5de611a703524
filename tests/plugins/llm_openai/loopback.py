"""A scripted OpenAI-compatible streaming server on 127.0.0.1 for the adapter's tests (anyio TCP, no deps).

Each accepted connection serves the next `Reply` of the script: a status and headers, body parts (bytes to send,
or a float to sleep), then an ending (`complete`, an abrupt `close`, or `hang` until the client goes away).
Every request is recorded; `client_closed` is set when a client hangs up on a reply that was still going.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from anyio.abc import SocketAttribute, SocketStream

__all__ = ["DONE", "Loopback", "Received", "Reply", "data", "loopback", "refused_url", "sse"]

DONE = b"data: [DONE]\n\n"


def data(obj: Any) -> bytes:
    """One SSE event whose data is `obj` as JSON."""
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def sse(*objs: Any) -> bytes:
    """Events for each object, then `[DONE]`."""
    return b"".join(data(o) for o in objs) + DONE


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    parts: Sequence[bytes | float] = ()
    chunked: bool = True
    end: Literal["complete", "close", "hang"] = "complete"
    respond: bool = True  # False: read the request, then never answer


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Loopback:
    base_url: str
    replies: list[Reply]
    requests: list[Received] = field(default_factory=list)
    client_closed: anyio.Event = field(default_factory=anyio.Event)


async def _read_request(stream: SocketStream) -> Received | None:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        try:
            buffer += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    head, _, body = buffer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        body += await stream.receive()
    return Received(method, path, headers, body)


async def _wait_closed(stream: SocketStream, server: Loopback) -> None:
    try:
        while await stream.receive():
            pass
    except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
        server.client_closed.set()


async def _serve(stream: SocketStream, server: Loopback) -> None:
    async with stream:
        request = await _read_request(stream)
        if request is None:
            return
        server.requests.append(request)
        reply = server.replies[min(len(server.requests), len(server.replies)) - 1]
        if not reply.respond:
            await _wait_closed(stream, server)
            return
        headers = dict(reply.headers)
        headers["connection"] = "close"
        if reply.chunked:
            headers["transfer-encoding"] = "chunked"
        head = f"HTTP/1.1 {reply.status} Status\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        try:
            await stream.send(head.encode("latin-1") + b"\r\n")
            for part in reply.parts:
                if isinstance(part, float):
                    await anyio.sleep(part)
                elif reply.chunked:
                    await stream.send(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                else:
                    await stream.send(part)
            if reply.end == "hang":
                await _wait_closed(stream, server)
            elif reply.end == "complete" and reply.chunked:
                await stream.send(b"0\r\n\r\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            server.client_closed.set()


@asynccontextmanager
async def loopback(*replies: Reply) -> AsyncIterator[Loopback]:
    """Serve `replies` in order (the last one repeats) on a fresh port until the block exits."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    server = Loopback(base_url=f"http://127.0.0.1:{port}/v1", replies=list(replies) or [Reply()])
    async with listener, anyio.create_task_group() as group:

        async def handle(stream: SocketStream) -> None:
            await _serve(stream, server)

        group.start_soon(listener.serve, handle)
        try:
            yield server
        finally:
            group.cancel_scope.cancel()


def refused_url() -> str:
    """A base URL on a local port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
