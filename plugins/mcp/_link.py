"""One connection to one MCP server, over the `mcp` SDK's `ClientSession`: a stdio server started as a guarded
child process (it dies with dsh, even by SIGKILL) with the tool environment policy's environment, or an HTTP
server (streamable HTTP or SSE). A `Link` lists the server's tools, calls one with a timeout (a cancelled call
cancels the request: the SDK sends `notifications/cancelled`), tells its owner when the server's tool list
changed, and sets `closed` when the connection ends (the server exited or the transport failed)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from dsh.runtime.about import version
from dsh.runtime.tools import ToolResult
from dsh.runtime.tools.guard import guarded

from ._config import HttpServer, ServerSpec, StdioServer, resolved
from ._results import map_result, tool_name

__all__ = ["Connector", "Link", "LinkError", "ListedTool", "ServerRef", "live_connector"]

STDERR_TAIL = 2000
"""How much of a stdio server's stderr an error quotes."""


@dataclass(frozen=True)
class ListedTool:
    """One tool a server offers: `name` as the model calls it, `raw` as the server calls it."""

    name: str
    raw: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class ServerRef:
    """Which server a connector connects: its name, its spec as configured (`${NAME}` references unresolved: the
    live connector resolves them, so a replay needs none of them set), the workspace it serves, and the environment
    the tool environment policy gives a stdio server (its spec's `env` is added to it)."""

    name: str
    spec: ServerSpec
    workspace: Path
    env: Mapping[str, str]


class LinkError(Exception):
    """The connection failed (the server exited, the transport broke, a request timed out): `lost` says whether
    the connection is gone."""

    def __init__(self, message: str, *, lost: bool) -> None:
        super().__init__(message)
        self.lost = lost


class Link(Protocol):
    """A connected server."""

    closed: anyio.Event

    async def tools(self) -> Sequence[ListedTool]: ...

    async def call(self, raw: str, arguments: dict[str, Any], limit_s: float) -> ToolResult: ...

    def diagnosis(self) -> str:
        """What the server said before it went (a stdio server's stderr tail), or ''."""
        ...


Connector = Callable[[ServerRef, Callable[[], None]], AbstractAsyncContextManager[Link]]
"""`connector(server, on_tools_changed)` opens a link (the plugin's is `live_connector`; replay swaps in one that
serves a recording's tools)."""


class _LiveLink:
    def __init__(self, server: str, session: ClientSession, stderr: IO[str] | None) -> None:
        self.server = server
        self.session = session
        self.closed = anyio.Event()
        self._stderr = stderr

    async def tools(self) -> list[ListedTool]:
        listed: list[ListedTool] = []
        cursor: str | None = None
        while True:
            params = None if cursor is None else mcp_types.PaginatedRequestParams(cursor=cursor)
            page = await self.session.list_tools(params=params)
            for tool in page.tools:
                listed.append(
                    ListedTool(
                        name=tool_name(self.server, tool.name),
                        raw=tool.name,
                        description=tool.description or "",
                        parameters=tool.input_schema,
                    )
                )
            cursor = page.next_cursor
            if cursor is None:
                return listed

    async def call(self, raw: str, arguments: dict[str, Any], limit_s: float) -> ToolResult:
        try:
            result = await self.session.call_tool(raw, arguments, read_timeout_seconds=limit_s)
        except MCPError as error:
            if error.code == mcp_types.REQUEST_TIMEOUT:
                raise LinkError(
                    f"did not answer within {limit_s:g}s (the request was cancelled)", lost=False
                ) from None
            if error.code == mcp_types.CONNECTION_CLOSED or self.closed.is_set():
                raise LinkError(
                    f"closed the connection during the call ({error.message})", lost=True
                ) from None
            raise  # a JSON-RPC error answer: the caller reports it
        return map_result(result, server=self.server, tool=raw)

    def diagnosis(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - STDERR_TAIL * 4))
            return self._stderr.read()[-STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""  # the file is already closed: the link is gone and nothing more can be read


async def _watch(
    source: MemoryObjectReceiveStream[SessionMessage | Exception],
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    closed: anyio.Event,
) -> None:
    """Pass the transport's messages to the session and set `closed` when the transport ends (a stdio server's
    stdout closes when it exits)."""
    try:
        async with source, sink:
            async for message in source:
                await sink.send(message)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # the session went first: the connection is being closed by its owner
    finally:
        closed.set()


@asynccontextmanager
async def _transport(ref: ServerRef, stack: AsyncExitStack) -> AsyncIterator[tuple[Any, Any, IO[str] | None]]:
    spec = resolved(ref.spec, os.environ, where=f'MCP server "{ref.name}"')
    if isinstance(spec, StdioServer):
        cwd = Path(spec.cwd) if spec.cwd is not None else ref.workspace
        if not cwd.is_absolute():
            cwd = ref.workspace / cwd
        argv = guarded([spec.command, *spec.args])  # dies with dsh, even by SIGKILL
        # closed by the stack, after the process is gone (its tail goes into errors until then)
        stderr = stack.enter_context(tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace"))  # noqa: SIM115
        params = StdioServerParameters(command=argv[0], args=argv[1:], env={**ref.env, **spec.env}, cwd=cwd)
        read, write = await stack.enter_async_context(stdio_client(params, errlog=stderr))
        yield read, write, stderr
        return
    assert isinstance(spec, HttpServer)
    if spec.type == "sse":
        read, write = await stack.enter_async_context(sse_client(spec.url, headers=dict(spec.headers)))
    else:
        client = await stack.enter_async_context(create_mcp_http_client(headers=dict(spec.headers)))
        read, write = await stack.enter_async_context(streamable_http_client(spec.url, http_client=client))
    yield read, write, None


@asynccontextmanager
async def live_connector(ref: ServerRef, on_tools_changed: Callable[[], None]) -> AsyncIterator[Link]:
    """Connect to `ref`'s server for real and initialize the MCP session; leaving closes it (a stdio server's
    stdin is closed, then its process group is terminated, as the SDK does)."""

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            on_tools_changed()

    async with AsyncExitStack() as stack, _transport(ref, stack) as (read, write, stderr):
        closed = anyio.Event()
        sink, source = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as group:
            group.start_soon(_watch, read, sink, closed)
            try:
                session = ClientSession(
                    source,
                    write,
                    message_handler=on_message,
                    client_info=mcp_types.Implementation(name="dsh", version=version()),
                )
                async with session:
                    link = _LiveLink(ref.name, session, stderr)
                    link.closed = closed
                    await session.initialize()
                    yield link
            finally:
                group.cancel_scope.cancel()
