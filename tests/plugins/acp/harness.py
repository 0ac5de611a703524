"""`dsh acp` as a subprocess, driven by the agent-client-protocol SDK's own client: a recording client, and a
context manager that starts the server against a deployment and hands back the client connection."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
from acp import Client, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import AgentMessageChunk, AgentThoughtChunk, TextContentBlock, UserMessageChunk

from tests.runtime.cli.helpers import DSH, plain_env


@dataclass
class Recorder:
    """The client side: records every session/update, and every raw message the agent sends."""

    updates: list[tuple[str, Any]] = field(default_factory=list)
    incoming: list[dict[str, Any]] = field(default_factory=list)
    arrived: anyio.Event = field(default_factory=anyio.Event)

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, update))
        self.arrived.set()
        self.arrived = anyio.Event()

    def observe(self, event: StreamEvent) -> None:
        if event.direction == StreamDirection.INCOMING:
            self.incoming.append(event.message)

    def of(self, session_id: str) -> list[Any]:
        return [update for sid, update in self.updates if sid == session_id]

    async def wait_for(self, check: Callable[[list[tuple[str, Any]]], bool]) -> None:
        """Wait until `check(updates)` holds (the caller bounds the wait with anyio.fail_after)."""
        while not check(self.updates):
            await self.arrived.wait()

    def clear(self) -> None:
        self.updates.clear()


def text_of(updates: list[Any], kind: type[AgentMessageChunk | AgentThoughtChunk | UserMessageChunk]) -> str:
    """The text of every update of `kind`, joined."""
    return "".join(
        u.content.text for u in updates if isinstance(u, kind) and isinstance(u.content, TextContentBlock)
    )


def kinds(updates: list[Any]) -> list[str]:
    """The `sessionUpdate` of each update, runs of one kind collapsed to one."""
    out: list[str] = []
    for update in updates:
        if not out or out[-1] != update.session_update:
            out.append(update.session_update)
    return out


def write_deployment(
    path: Path,
    base_url: str,
    *,
    persona: str = "You are a test agent; work in {{cwd}}.",
    extra: tuple[dict[str, object], ...] = (),
) -> Path:
    from tests.runtime.cli.helpers import deployment

    path.write_text(deployment(base_url, persona=persona, extra=extra))
    return path


class _NotJson(logging.Handler):
    """Counts the SDK client's complaints about a line on the server's stdout that was not JSON-RPC."""

    def __init__(self) -> None:
        super().__init__()
        self.lines = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Error parsing JSON-RPC message"):
            self.lines += 1


@asynccontextmanager
async def dsh_acp(
    tmp_path: Path,
    config: Path,
    recorder: Recorder,
    *,
    store: Path | None = None,
    extra: Sequence[str] = (),
) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    """Start `dsh acp` (stderr to tmp_path/acp-stderr.log) and connect the SDK's client to it; the process is
    stopped by closing its stdin when the block exits, and must have written nothing but JSON-RPC on stdout."""
    log = tmp_path / "acp-stderr.log"
    not_json = _NotJson()
    logging.getLogger().addHandler(not_json)
    with log.open("ab") as stderr:
        async with spawn_agent_process(
            cast(Client, recorder),
            DSH[0],
            *DSH[1:],
            "acp",
            "--config",
            str(config),
            "--store",
            str(store or tmp_path / "sessions.db"),
            *extra,
            env=plain_env(),
            cwd=tmp_path,
            transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": 10.0},
            use_unstable_protocol=True,
            observers=[recorder.observe],
        ) as (conn, process):
            yield conn, process
        logging.getLogger().removeHandler(not_json)
        assert process.returncode == 0, log.read_text()
        assert not_json.lines == 0, "dsh acp wrote something other than JSON-RPC on stdout"


def stderr_of(tmp_path: Path) -> str:
    return (tmp_path / "acp-stderr.log").read_text()


def request_json(body: bytes) -> Any:
    return json.loads(body)
