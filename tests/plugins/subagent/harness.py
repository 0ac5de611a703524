"""A host with the subagent service, both in-process providers and their tools loaded over the agent-loop test
host, plus helpers to read what a run left in the store."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from dsh.plugins import subagent, tool_subagent
from dsh.runtime.kernel import Context
from dsh.runtime.llm import LlmRequest
from dsh.runtime.session import SessionStore, SessionStoreProtocol, SpawnedBy
from dsh.runtime.tools import Tool
from tests.runtime.agent.harness import ScriptedAdapter, host

ROOT = Path(__file__).resolve().parents[3]
FORK_FIXTURE = ROOT / "fixtures" / "harness" / "subagent-fork-in-process"


@contextmanager
def subagent_host(
    tmp_path: Path,
    adapter: ScriptedAdapter,
    *,
    max_depth: int = 3,
    tool_list: Sequence[Tool] = (),
) -> Iterator[Context]:
    """The agent-loop host with `dsh.plugins.subagent` (service, `spawn`, `fork`) and the `subagent` and
    `subagent_fork` tools."""
    with host(tmp_path, adapter, tool_list=tool_list) as ctx:
        ctx.plugin(subagent.plugin, {"max_depth": max_depth})
        ctx.plugin(subagent.spawn_plugin)
        ctx.plugin(subagent.fork_plugin)
        ctx.plugin(tool_subagent.plugin, {"provider": "spawn"}, id="tool-subagent")
        ctx.plugin(tool_subagent.plugin, {"provider": "fork"}, id="tool-subagent-fork")
        yield ctx


def by_spawning_call(store: SessionStoreProtocol) -> Callable[[LlmRequest], str]:
    """A ScriptedAdapter key: a child's calls are scripted by the id of the tool call that spawned it; a
    top-level session's by `parent`."""

    def key(request: LlmRequest) -> str:
        assert request.session_id is not None
        spawned = store.info(request.session_id).spawned_by
        return "parent" if spawned is None else spawned.call_id

    return key


def event_rows(store: SessionStoreProtocol, session_id: str | None = None) -> int:
    """Rows of the events table (of one session, or all): what a fork must not copy."""
    assert isinstance(store, SessionStore)  # these tests run on the SQLite store
    conn = store.connect()
    try:
        if session_id is None:
            return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
        return int(
            conn.execute("SELECT count(*) FROM events WHERE session_id = ?", (session_id,)).fetchone()[0]
        )
    finally:
        conn.close()


def data_of(store: SessionStoreProtocol, session_id: str, kind: str) -> list[Any]:
    """The decoded data of every `kind` event of a session's full log."""
    return [msgspec.json.decode(e.data) for e in store.events(session_id, types=(kind,))]


def spawned(turn: int, step: int, call_id: str) -> SpawnedBy:
    return SpawnedBy(turn=turn, step=step, call_id=call_id)
