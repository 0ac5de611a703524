"""`bash` with `run_in_background`: off by default (the parameter undeclared, a forced call refused, no job tools),
and, enabled, a call that returns a job id at once; the command's output read with job_output, its exit code in the
status; a job killed with job_kill, or by its agent closing, leaves no process behind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from dsh.plugins.tool_bash import BashConfig, plugin
from dsh.runtime import jobs as jobs_module
from dsh.runtime.agent import AGENTS, Agent
from dsh.runtime.jobs import JOB_TOOLS, SECTION
from dsh.runtime.kernel import Context
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.tools import TOOLS, ToolContext, ToolResult
from tests.runtime.agent.harness import OPTIONS, ScriptedAdapter, host, text

from ..tool_host import model_view, tool_host
from ..tool_host import text as section_text
from .test_bash import alive

pytestmark = pytest.mark.anyio


@contextmanager
def bash_host(tmp_path: Path, **config: Any) -> Iterator[Context]:
    with host(tmp_path, ScriptedAdapter([text("noted")] * 20)) as ctx:
        ctx.plugin(jobs_module.plugin)
        ctx.plugin(plugin, BashConfig(**config))
        yield ctx


async def call(agent: Agent, tool: str, cwd: Path, **arguments: Any) -> ToolResult:
    context = ToolContext(ctx=agent.ctx, cwd=cwd, call_id="c1", log=agent.log, agent=agent)
    return await agent.ctx.get(TOOLS).execute(
        ToolCallBlock(CallId("c1"), tool, json.dumps(arguments)), context
    )


def test_background_is_off_by_default_the_parameter_undeclared_and_no_job_tools() -> None:
    ctx = tool_host()
    ctx.plugin(jobs_module.plugin)
    ctx.plugin(plugin)
    system, tools = model_view(ctx)
    assert [t["name"] for t in tools] == ["bash"]
    assert "run_in_background" not in tools[0]["parameters"]["properties"]
    assert "run_in_background" not in tools[0]["description"]
    assert section_text(SECTION) not in system


def test_enabled_the_parameter_job_tools_and_section_appear() -> None:
    ctx = tool_host()
    ctx.plugin(jobs_module.plugin)
    loaded = ctx.plugin(plugin, BashConfig(run_in_background=True))
    system, tools = model_view(ctx)
    assert [t["name"] for t in tools] == ["bash", *sorted(JOB_TOOLS)]
    bash = tools[0]
    assert bash["parameters"]["properties"]["run_in_background"]["type"] == "boolean"
    assert "`run_in_background: true`" in bash["description"]
    assert section_text(SECTION) in system
    loaded.unload()
    system, tools = model_view(ctx)
    assert tools == []
    assert section_text(SECTION) not in system


async def test_a_forced_background_call_is_refused_when_disabled(tmp_path: Path) -> None:
    with bash_host(tmp_path) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            refused = await call(
                agent, "bash", tmp_path, command="sleep 30", description="Wait", run_in_background=True
            )
            assert refused.is_error
            assert "run_in_background is disabled for this tool instance" in refused.text
            assert not list(agent.log.store.events(agent.id, types=("job/started",)))


async def read_until(agent: Agent, cwd: Path, job_id: str, needle: str) -> str:
    seen = ""
    with anyio.fail_after(10):
        while needle not in seen:
            seen += (await call(agent, "job_output", cwd, job_id=job_id)).text.rsplit("\n", 1)[0] + "\n"
            await anyio.sleep(0.02)
    return seen


async def test_a_background_command_returns_a_job_id_at_once_and_is_read_with_job_output(
    tmp_path: Path,
) -> None:
    with bash_host(tmp_path, run_in_background=True) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            release = tmp_path / "go"
            command = f"echo first; while [ ! -e {release} ]; do sleep 0.02; done; echo second >&2; exit 4"
            started = await call(
                agent, "bash", tmp_path, command=command, description="Two lines", run_in_background=True
            )
            assert started.text.startswith("started background job job-1")
            assert started.meta == {"jobId": "job-1"}
            assert "first" in await read_until(agent, tmp_path, "job-1", "first")
            release.touch()
            done = await call(agent, "job_output", tmp_path, job_id="job-1", wait=True)
            assert (
                done.text == "second\n[status: completed, exit code: 4]"
            )  # only what came since the last read
            started_event = json.loads(next(agent.log.store.events(agent.id, types=("job/started",))).data)
            assert started_event == {
                "jobId": "job-1",
                "kind": "stream",
                "tool": "bash",
                "callId": "c1",
                "label": "Two lines",
            }


async def test_job_kill_stops_the_command_and_closing_the_agent_kills_the_rest(tmp_path: Path) -> None:
    with bash_host(tmp_path, run_in_background=True) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as agent:
            pids = []
            for number in (1, 2):
                await call(
                    agent,
                    "bash",
                    tmp_path,
                    command="echo pid $$; exec sleep 30",
                    description="Sleep",
                    run_in_background=True,
                )
                seen = await read_until(agent, tmp_path, f"job-{number}", "pid ")
                pids.append(int(seen.split("pid ")[1].split()[0]))
            assert all(alive(pid) for pid in pids)
            killed = await call(agent, "job_kill", tmp_path, job_id="job-1", reason="done with it")
            assert "kill requested" in killed.text
            read = await call(agent, "job_output", tmp_path, job_id="job-1", wait=True)
            assert read.text.endswith("[status: killed (done with it)]")
            assert not alive(pids[0])
            assert alive(pids[1])
        # the agent closed: its other job is killed, its process gone, and the outcome logged
        assert not alive(pids[1])
        settled = [json.loads(e.data) for e in agent.log.store.events(agent.id, types=("job/settled",))]
        assert settled == [
            {"jobId": "job-1", "status": "killed", "reason": "done with it"},
            {"jobId": "job-2", "status": "killed", "reason": "its agent closed"},
        ]
