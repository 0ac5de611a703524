"""What a call to an MCP tool costs through dsh against the same call made directly with the `mcp` SDK's
`ClientSession`, over stdio and over streamable HTTP, to the test server (tests/plugins/mcp/server.py, its `echo`
tool). Through dsh is the tool registry's pipeline as the agent loop runs it (parse and validate the arguments,
the executor waterfall, the mcp plugin's call with its timeout and result mapping) on a server the plugin started
for a session; directly is `session.call_tool` on a session the benchmark opened itself. Target: at most 1.2x.
Figures are ratios of the best of several runs, each run measured alternately."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from dsh.plugins import mcp
from dsh.runtime import agent, llm, prompt, tools
from dsh.runtime.agent import AGENTS, Agent, AgentOptions
from dsh.runtime.kernel import Context
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.session import STORE, CountingIds, FixedClock, SessionStore
from dsh.runtime.tools import TOOLS, ToolContext

SERVER = Path(__file__).parents[1] / "tests" / "plugins" / "mcp" / "server.py"
CALLS = 100
RUNS = 5
TARGET = 1.2


async def _best(runs: dict[str, Callable[[], Awaitable[None]]]) -> dict[str, float]:
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(RUNS):
        for name, work in runs.items():  # alternately, so a load spike lands on both
            start = time.perf_counter()
            await work()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


@asynccontextmanager
async def _direct(transport: AbstractAsyncContextManager[Any]) -> AsyncIterator[ClientSession]:
    async with transport as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def _through_dsh(workspace: Path, spec: dict[str, Any]) -> AsyncIterator[Agent]:
    """A session of a host with the mcp plugin, its server `bench` connected."""
    ctx = Context()
    with SessionStore(workspace / "sessions.db", clock=FixedClock(1_000, 1), ids=CountingIds()) as store:
        ctx.provide(STORE, store)
        ctx.plugin(prompt.plugin)
        ctx.plugin(llm.plugin)
        ctx.plugin(tools.plugin)
        ctx.plugin(agent.plugin)
        ctx.plugin(mcp.plugin, {"servers": {"bench": spec}})
        try:
            async with ctx.get(AGENTS).create(AgentOptions(cwd=workspace)) as session:
                await ctx.get(mcp.MCP).connect(session)
                yield session
        finally:
            ctx.dispose()


async def _pair(workspace: Path, spec: dict[str, Any], direct: AbstractAsyncContextManager[Any]) -> float:
    async with _through_dsh(workspace, spec) as session, _direct(direct) as client:
        view = session.ctx.get(TOOLS)
        context = ToolContext(ctx=session.ctx, cwd=workspace, call_id="bench")
        call = ToolCallBlock(CallId("bench"), "mcp__bench__echo", '{"text": "hi"}')

        async def dsh() -> None:
            for _ in range(CALLS):
                result = await view.execute(call, context)
                assert result.text == "echo: hi", result.text

        async def sdk() -> None:
            for _ in range(CALLS):
                result = await client.call_tool("echo", {"text": "hi"})
                assert not result.is_error

        best = await _best({"dsh": dsh, "sdk": sdk})
    print(f"  {CALLS} calls: sdk {best['sdk'] * 1000:.1f} ms, dsh {best['dsh'] * 1000:.1f} ms")
    return best["dsh"] / best["sdk"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _run(workspace: Path, url: str) -> dict[str, float]:
    stdio = {"command": sys.executable, "args": [str(SERVER), "stdio"]}
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio"], env=dict(os.environ))
    print("stdio:")
    ratios = {"stdio": await _pair(workspace / "stdio", stdio, stdio_client(params))}
    print("streamable HTTP:")
    ratios["http"] = await _pair(
        workspace / "http", {"type": "http", "url": url}, streamable_http_client(url)
    )
    return ratios


def main() -> int:
    port = _free_port()
    with (
        tempfile.TemporaryDirectory() as tmp,
        subprocess.Popen(
            [sys.executable, str(SERVER), "http", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ) as server,
    ):
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        print("the test MCP server did not start", file=sys.stderr)
                        return 1
                    time.sleep(0.05)
            for name in ("stdio", "http"):
                (Path(tmp) / name).mkdir()
            ratios = anyio.run(_run, Path(tmp), f"http://127.0.0.1:{port}/mcp")
        finally:
            server.terminate()
            server.wait(10)
    status = 0
    for transport, ratio in ratios.items():
        verdict = "ok" if ratio <= TARGET else "OVER TARGET"
        print(
            f"mcp call through dsh / direct ClientSession ({transport}): {ratio:.2f}x (target <= {TARGET}x) {verdict}"
        )
        status |= ratio > TARGET
    return status


if __name__ == "__main__":
    sys.exit(main())
