"""An agent with bash, approvals and hooks loaded over a scripted model, for the human-in-the-loop tests: run one
turn in a workspace and read back its log."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from dsh.plugins import hooks, interaction, tool_bash
from dsh.runtime.agent import AGENTS, AgentOptions
from dsh.runtime.kernel import Context
from dsh.runtime.session import STORE, StoredEvent
from dsh.runtime.tools import ASK, Approval, ApprovalRequest
from tests.runtime.agent.harness import MODEL, PROVIDER, ScriptedAdapter, Step, calls, host, text

Answer = Callable[[ApprovalRequest], Awaitable[Approval | None]]


def bash_call(command: str, call_id: str = "c1", **extra: str) -> list[Any]:
    return calls((call_id, "bash", json.dumps({"command": command, "description": "run it", **extra})))


def write_hooks(workspace: Path, config: dict[str, Any], *, name: str = "hooks.json") -> None:
    (workspace / name).write_text(json.dumps({"hooks": config}), encoding="utf-8")


async def run_turn(
    tmp_path: Path,
    workspace: Path,
    steps: Sequence[Step],
    *,
    prompt: str = "go",
    policy: str = "ask",
    answer: Answer | None = None,
    bash: dict[str, Any] | None = None,
    hook_config: dict[str, Any] | None = None,
    before: Callable[[Context, Any], Awaitable[None]] | None = None,
) -> tuple[list[StoredEvent], Any]:
    """Run one turn of an agent in `workspace`; return its log's events and the turn's outcome."""
    adapter = ScriptedAdapter(steps)
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(tool_bash.plugin, {"escalation": True, **(bash or {})})
        ctx.plugin(interaction.plugin, {"policy": policy})
        ctx.plugin(hooks.plugin, {"project_config": True, **(hook_config or {})})
        if answer is not None:

            async def ask(value: Approval | None, request: ApprovalRequest, next_: Any) -> Approval | None:
                return await answer(request)

            ctx.on(ASK, ask)
        options = AgentOptions(provider=PROVIDER, model=MODEL, cwd=workspace)
        async with ctx.get(AGENTS).create(options) as agent:
            if before is not None:
                await before(ctx, agent)
            outcome = await agent.run(prompt)
            await agent.log.flush()
            events = list(ctx.get(STORE).events(agent.id))
    assert not adapter.unserved(), adapter.unserved()
    return events, outcome


def data_of(events: list[StoredEvent], kind: str) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in events if e.type == kind]


def result_texts(events: list[StoredEvent]) -> list[str]:
    return [
        block["content"][0]["text"]
        for data in data_of(events, "tool/result")
        for block in data["message"]["content"]
    ]


__all__ = ["bash_call", "data_of", "result_texts", "run_turn", "text", "write_hooks"]
