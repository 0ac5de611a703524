"""The one-shot subagent tool with `run_in_background` enabled: a call with `run_in_background: true` returns
`started background subagent job <id>` at once; the child runs as a final-output job of the parent, whose result is
the child's answer (or, for a child that fails, its error text, the job settling failed); its settlement notice
wakes the idle parent. Without the flag the tool keeps refusing background calls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from dsh.plugins import subagent, tool_subagent
from dsh.runtime import jobs as jobs_module
from dsh.runtime.agent import AGENTS, Agent
from dsh.runtime.kernel import Context
from dsh.runtime.llm import CallId, LlmRequest, StreamChunk, ToolCallBlock
from dsh.runtime.session import STORE
from dsh.runtime.tools import TOOLS, ToolContext
from tests.plugins.subagent.harness import by_spawning_call, data_of
from tests.runtime.agent.harness import OPTIONS, ScriptedAdapter, calls, failure, host, text

pytestmark = pytest.mark.anyio


@contextmanager
def job_host(tmp_path: Path, adapter: ScriptedAdapter, *, enabled: bool = True) -> Iterator[Context]:
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(jobs_module.plugin)
        ctx.plugin(subagent.plugin, {"max_depth": 3})
        ctx.plugin(subagent.spawn_plugin)
        ctx.plugin(
            tool_subagent.plugin, {"provider": "spawn", "run_in_background": enabled}, id="tool-subagent"
        )
        adapter.key = by_spawning_call(ctx.get(STORE))
        yield ctx


def background(call_id: str, prompt: str) -> list[StreamChunk]:
    arguments = {"description": "Count files", "prompt": prompt, "run_in_background": True}
    return calls((call_id, "subagent", json.dumps(arguments)))


async def settled(parent: Agent) -> None:
    with anyio.fail_after(10):
        while True:
            notices = [e for e in parent.log.store.events(parent.id, types=("job/settled",))]
            if notices and not parent.busy and not parent.pending("next-turn"):
                return
            await anyio.sleep(0.01)


async def job_output(parent: Agent, **arguments: Any) -> str:
    context = ToolContext(ctx=parent.ctx, cwd=Path("/"), call_id="r1", log=parent.log, agent=parent)
    result = await parent.ctx.get(TOOLS).execute(
        ToolCallBlock(CallId("r1"), "job_output", json.dumps(arguments)), context
    )
    return result.text


def schema(ctx: Context) -> dict[str, Any]:
    tool = ctx.get(TOOLS).get("subagent")
    assert tool is not None
    return {"description": tool.description, **tool.parameters}


def test_enabled_the_one_shot_tool_declares_the_parameter_and_the_job_tools_exist(tmp_path: Path) -> None:
    with job_host(tmp_path, ScriptedAdapter()) as ctx:
        declared = schema(ctx)
        assert "run_in_background" in declared["properties"]
        assert "returns a job id" in declared["description"]
        assert ctx.get(TOOLS).get("job_output") is not None
    with job_host(tmp_path / "off", ScriptedAdapter(), enabled=False) as ctx:
        assert "run_in_background" not in schema(ctx)["properties"]
        assert ctx.get(TOOLS).get("job_output") is None


def held(
    release: anyio.Event, chunks: list[StreamChunk]
) -> Callable[[LlmRequest], AsyncIterator[StreamChunk]]:
    """A child's reply that waits for `release`: it answers once the parent's turn is over."""

    async def stream(request: LlmRequest) -> AsyncIterator[StreamChunk]:
        await release.wait()
        for chunk in chunks:
            yield chunk

    return stream


async def test_a_background_subagent_is_a_final_output_job_with_the_childs_answer(tmp_path: Path) -> None:
    release = anyio.Event()
    adapter = ScriptedAdapter(
        scripts={
            "parent": [background("c1", "Count the files."), text("Started."), text("noted")],
            "c1": [held(release, text("there are 3"))],
        }
    )
    with job_host(tmp_path, adapter) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            outcome = await parent.run("Count the files in the background.")
            assert await job_output(parent, job_id="job-1") == "(no result yet)\n[status: running]"
            release.set()
            await settled(parent)
            assert await job_output(parent, job_id="job-1") == "there are 3\n[status: completed]"
            started = data_of(parent.log.store, parent.id, "job/started")
            ended = data_of(parent.log.store, parent.id, "job/settled")
            results = data_of(parent.log.store, parent.id, "tool/result")
        assert outcome.text == "Started."
        assert (
            results[0]["message"]["content"][0]["content"][0]["text"]
            == "started background subagent job job-1"
        )
        assert started == [
            {
                "jobId": "job-1",
                "kind": "final-output",
                "tool": "subagent",
                "callId": "c1",
                "turn": 1,
                "step": 1,
                "label": "Count files",
            }
        ]
        assert ended == [{"jobId": "job-1", "status": "completed"}]
        assert parent.log.state.last_turn == 2, "the settlement notice woke the idle parent for a turn"
        assert adapter.unserved() == {}


async def test_a_failing_background_child_settles_failed_with_its_error_text(tmp_path: Path) -> None:
    release = anyio.Event()
    adapter = ScriptedAdapter(
        scripts={
            "parent": [background("c1", "Count the files."), text("Started."), text("noted")],
            "c1": [held(release, failure("AUTH", "the key was refused"))],
        }
    )
    with job_host(tmp_path, adapter) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            await parent.run("Count the files in the background.")
            release.set()
            await settled(parent)
            read = await job_output(parent, job_id="job-1")
            ended = data_of(parent.log.store, parent.id, "job/settled")
        assert read.startswith("Error: subagent run failed")
        assert read.endswith("[status: failed]")
        assert ended[0]["status"] == "failed"
        assert ended[0]["error"] == "Error: subagent run failed"


async def test_without_the_flag_a_background_call_is_still_refused(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(scripts={"parent": [background("c1", "Count the files."), text("Refused.")]})
    with job_host(tmp_path, adapter, enabled=False) as ctx:
        async with ctx.get(AGENTS).create(OPTIONS) as parent:
            await parent.run("Count the files in the background.")
            results = data_of(parent.log.store, parent.id, "tool/result")
        block = results[0]["message"]["content"][0]
        assert block["isError"]
        assert "run_in_background is disabled for this tool instance" in block["content"][0]["text"]
        assert ctx.get(STORE).children(parent.id) == []
