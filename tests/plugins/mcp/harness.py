"""Real MCP servers for the mcp plugin's tests: `mcp-server-time` (from PyPI, the `test-servers` extra) and the
test server in `server.py`, over stdio (dsh starts them) or streamable HTTP on 127.0.0.1 (started here in a
subprocess, stopped after); a host with the mcp plugin loaded over the agent-loop test harness; and readers of
what the log holds."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from dsh.plugins import mcp
from dsh.runtime.agent import Agent, AgentOptions
from dsh.runtime.kernel import Context
from dsh.runtime.llm import ImageBlock, TextBlock, ToolResultBlock
from dsh.runtime.session import ToolResultEvent
from tests.runtime.agent.harness import MODEL, PROVIDER, ScriptedAdapter, host

SERVER = str(Path(__file__).with_name("server.py"))
STDIO = {"command": sys.executable, "args": [SERVER, "stdio"]}
START_S = 60.0


def time_server() -> str:
    """The `mcp-server-time` command installed beside this interpreter (the `test-servers` extra)."""
    found = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    assert found is not None, "mcp-server-time is not installed: scripts/uv sync --extra test-servers"
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class HttpServer:
    url: str
    log: Path
    process: subprocess.Popen[bytes]


@contextmanager
def http_server(tmp: Path) -> Iterator[HttpServer]:
    """server.py over streamable HTTP on 127.0.0.1, stopped on exit."""
    port = free_port()
    log = tmp / "server.log"
    stderr = (tmp / "server.stderr").open("wb")
    env = os.environ | {"MCP_TEST_LOG": str(log)}
    process = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=stderr
    )
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the test MCP server did not start: {(tmp / 'server.stderr').read_text()}"
                    ) from None
                time.sleep(0.05)
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", log, process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        stderr.close()


@contextmanager
def mcp_host(tmp_path: Path, adapter: ScriptedAdapter, config: dict[str, Any]) -> Iterator[Context]:
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(mcp.plugin, {"connect_timeout_s": START_S, **config})
        yield ctx


def options(tmp_path: Path) -> AgentOptions:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return AgentOptions(provider=PROVIDER, model=MODEL, cwd=workspace)


@dataclass(frozen=True)
class Logged:
    """A tool/result as logged: its text, images, error flag, code and meta."""

    text: str
    images: tuple[ImageBlock, ...]
    is_error: bool
    code: str | None
    meta: dict[str, Any]


def results(agent: Agent, session_id: str | None = None) -> list[Logged]:
    """The tool results `agent`'s session logged (or those of `session_id`, in the same store)."""
    found = []
    for event in agent.log.store.events(session_id or agent.id, types=("tool/result",)):
        view = event.view()
        assert isinstance(view, ToolResultEvent)
        for block in view.data.message.content:
            if isinstance(block, ToolResultBlock):
                found.append(
                    Logged(
                        text="".join(p.text for p in block.content if isinstance(p, TextBlock)),
                        images=tuple(p for p in block.content if isinstance(p, ImageBlock)),
                        is_error=block.is_error,
                        code=None if view.data.error is None else view.data.error.code,
                        meta=dict(view.data.meta or {}),
                    )
                )
    return found


async def until(check: Callable[[], bool]) -> None:
    """Poll `check` until it holds (the caller bounds the wait with anyio.fail_after)."""
    while True:
        if check():
            return
        await anyio.sleep(0.02)


def logged(log: Path, line: str) -> Callable[[], bool]:
    """Whether the test server has written `line` to its log."""
    return lambda: log.exists() and line in log.read_text()


def tool_names(adapter: ScriptedAdapter, request: int) -> list[str]:
    return [tool.name for tool in adapter.requests[request].tools]


def arguments(**values: Any) -> str:
    return json.dumps(values)
