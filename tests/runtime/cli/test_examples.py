"""The example deployments are complete: each loads over a session store, runs the agent loop, and renders the
prompt its agent would send (the ACP one states the session's cwd)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from dsh.runtime.agent import AGENTS, assemble_context_for
from dsh.runtime.host import open_host
from dsh.runtime.prompt import SYSTEM_PROMPT, render_prompt

EXAMPLES = Path(__file__).parents[3] / "examples"


@pytest.mark.parametrize("name", ["coding-agent.yml", "acp-agent.yml"])
def test_an_example_runs_the_agent_loop_with_its_tools(name: str, tmp_path: Path) -> None:
    async def render() -> tuple[str, list[str]]:
        with open_host(EXAMPLES / name, tmp_path / "s.db") as host:
            async with host.ctx.get(AGENTS).create(host.options(cwd=tmp_path)) as agent:
                assembly = await agent.ctx.get(SYSTEM_PROMPT).assemble(assemble_context_for(agent))
                return render_prompt(assembly), [tool.name for tool in assembly.tools]

    system, tools = anyio.run(render)
    assert "deepseek-v4-flash" in system
    assert "{{" not in system
    assert {"bash", "read", "write", "edit", "glob", "grep", "web_fetch"} <= set(tools)
    if name == "acp-agent.yml":
        assert f"The workspace is {tmp_path};" in system
