"""The job service and its tools, through real agents: statuses and what each logs, the settlement notice in the
agent's inbox, kill on request and on close, stream reads since the previous read, waits and their timeout, unknown
ids and another agent's jobs, and the job tools present exactly while some tool instance enables them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from dsh.runtime import jobs as jobs_module
from dsh.runtime.agent import AGENTS, EVENT, Agent, AgentEvent
from dsh.runtime.jobs import (
    JOB_TOOLS,
    JOBS,
    LOST,
    SECTION,
    JobEnd,
    JobIO,
    JobsConfig,
    JobService,
    background_jobs,
)
from dsh.runtime.kernel import ConfigError, Context, NoConfig, Plugin
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.prompt import SYSTEM_PROMPT
from dsh.runtime.session import JobStarted, JobStartedData
from dsh.runtime.tools import TOOLS, Tool, ToolContext, ToolResult
from tests.runtime.agent.harness import OPTIONS, ScriptedAdapter, calls, host, text

pytestmark = pytest.mark.anyio


def enabler(name: str = "enabler") -> Plugin[NoConfig]:
    """A tool plugin that enables background jobs, as bash's `run_in_background: true` does."""

    def apply(ctx: Context, config: NoConfig) -> None:
        background_jobs(ctx, tool=name)

    return Plugin(name=name, apply=apply, needs=(TOOLS,))


@contextmanager
def job_host(tmp_path: Path, *, wait_ms: int = 30_000) -> Iterator[Context]:
    # every settlement notice wakes the agent for a turn: the model acknowledges each
    adapter = ScriptedAdapter([text("noted")] * 20)
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(jobs_module.plugin, JobsConfig(wait_ms=wait_ms))
        ctx.plugin(enabler())
        yield ctx


@asynccontextmanager
async def agent_of(ctx: Context) -> AsyncIterator[Agent]:
    async with ctx.get(AGENTS).create(OPTIONS) as agent:
        yield agent


async def call(ctx: Context, agent: Agent, tool: str, **arguments: Any) -> ToolResult:
    context = ToolContext(ctx=agent.ctx, cwd=Path("/"), call_id="c1", log=agent.log, agent=agent)
    return await agent.ctx.get(TOOLS).execute(
        ToolCallBlock(CallId("c1"), tool, json.dumps(arguments)), context
    )


def logged(agent: Agent, tag: str) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in agent.log.store.events(agent.id, types=(tag,))]


def notices(agent: Agent) -> list[str]:
    out = []
    for event in agent.log.store.events(agent.id, types=("agent/inbox/spliced",)):
        for item in json.loads(event.data).get("inserted", []):
            if item["source"]["kind"] == "job-settled":
                out.append(item["content"][0]["text"])
    return out


async def settle(agent: Agent) -> None:
    """Until the agent has taken in every notice and is idle."""
    with anyio.fail_after(10):
        while True:
            if not (agent.busy or agent.pending("next-turn")):
                return
            await anyio.sleep(0.01)


def service(ctx: Context) -> JobService:
    return ctx.get(JOBS)


async def test_a_completed_job_is_logged_and_its_notice_reaches_the_inbox(tmp_path: Path) -> None:
    with job_host(tmp_path) as ctx:
        async with agent_of(ctx) as agent:

            async def work(io: JobIO) -> JobEnd:
                io.write(b"hello\n")
                return JobEnd("completed", exit_code=3)

            job = await service(ctx).of(agent).start("stream", "bash", work, label="say hello", call_id="c1")
            assert job.id == "job-1"
            assert await job.wait(5)
            await settle(agent)
            assert job.status == "completed"
            assert logged(agent, "job/started") == [
                {"jobId": "job-1", "kind": "stream", "tool": "bash", "callId": "c1", "label": "say hello"}
            ]
            assert logged(agent, "job/settled") == [{"jobId": "job-1", "status": "completed", "exitCode": 3}]
            assert notices(agent) == [
                "Background job job-1 (bash: say hello) completed with exit code 3. Read it with job_output "
                "(job_id job-1)."
            ]
            # the notice started a turn of its own: the agent was idle
            assert agent.log.state.last_turn == 1
            read = await call(ctx, agent, "job_output", job_id="job-1")
            assert read.text == "hello\n[status: completed, exit code: 3]"


async def test_the_settled_event_lands_just_before_the_notice(tmp_path: Path) -> None:
    with job_host(tmp_path) as ctx:
        async with agent_of(ctx) as agent:

            async def work(io: JobIO) -> JobEnd:
                return JobEnd("completed", exit_code=0)

            job = await service(ctx).of(agent).start("stream", "bash", work)
            await job.wait(5)
            await settle(agent)
            types = [e.type for e in agent.log.store.events(agent.id)]
            at = types.index("job/settled")
            assert types[at + 1] == "agent/inbox/spliced"


async def test_a_failing_job_settles_failed_with_its_error(tmp_path: Path) -> None:
    with job_host(tmp_path) as ctx:
        async with agent_of(ctx) as agent:

            async def work(io: JobIO) -> JobEnd:
                raise OSError("no such shell")

            job = await service(ctx).of(agent).start("stream", "bash", work)
            await job.wait(5)
            await settle(agent)
            assert job.status == "failed"
            assert logged(agent, "job/settled") == [
                {"jobId": "job-1", "status": "failed", "error": "OSError: no such shell"}
            ]
            read = await call(ctx, agent, "job_output", job_id="job-1")
            assert read.text.endswith("[status: failed: OSError: no such shell]")


async def never(io: JobIO) -> JobEnd:
    io.write("started\n")
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


async def test_job_kill_returns_at_once_and_the_job_settles_killed(tmp_path: Path) -> None:
    with job_host(tmp_path) as ctx:
        async with agent_of(ctx) as agent:
            job = await service(ctx).of(agent).start("stream", "bash", never)
            killed = await call(ctx, agent, "job_kill", job_id="job-1", reason="not needed")
            assert not killed.is_error
            assert "kill requested for job job-1" in killed.text
            assert await job.wait(5)
            await settle(agent)
            assert job.status == "killed"
            assert logged(agent, "job/settled") == [
                {"jobId": "job-1", "status": "killed", "reason": "not needed"}
            ]
            again = await call(ctx, agent, "job_kill", job_id="job-1")
            assert "already settled" in again.text
            assert not again.is_error


async def test_every_job_is_killed_when_its_agent_closes_and_the_outcome_is_logged(tmp_path: Path) -> None:
    with job_host(tmp_path) as ctx:
        async with agent_of(ctx) as agent:
            first = await service(ctx).of(agent).start("stream", "bash", never)
            second = await service(ctx).of(agent).start("final-output", "subagent", never)
            assert first.status == second.status == "running"
        assert {first.status, second.status} == {"killed"}
        settled = logged(agent, "job/settled")
        assert sorted(s["jobId"] for s in settled) == ["job-1", "job-2"]
        assert {s["status"] for s in settled} == {"killed"}
        assert {s["reason"] for s in settled} == {"its agent closed"}
        assert notices(agent) == []  # the agent is gone: nobody to notify


async def test_an_outcome_logged_before_its_notice_was_cut_off_is_logged_once(tmp_path: Path) -> None:
    with job_host(tmp_path) as ctx:
        async with agent_of(ctx) as agent:
            outcome_logged = anyio.Event()

            async def hold(event: AgentEvent) -> None:
                # the agent closes while the notice is between its job/settled and its splice
                if event.agent is agent and event.event.type == "job/settled":
                    outcome_logged.set()
                    await anyio.sleep_forever()

            agent.ctx.on(EVENT, hold)

            async def work(io: JobIO) -> JobEnd:
                return JobEnd("completed", exit_code=0)

            await service(ctx).of(agent).start("stream", "bash", work)
            with anyio.fail_after(5):
                await outcome_logged.wait()
        assert logged(agent, "job/settled") == [{"jobId": "job-1", "status": "completed", "exitCode": 0}]
        assert notices(agent) == []


async def test_a_stream_read_returns_only_what_arrived_since_the_previous_read(tmp_path: Path) -> None:
    with job_host(tmp_path) as ctx:
        async with agent_of(ctx) as agent:
            more = anyio.Event()

            async def work(io: JobIO) -> JobEnd:
                io.write(b"one\n")
                await more.wait()
                io.write(b"two\n"[:2])
                io.write(b"two\n"[2:])
                io.write("é\n".encode()[:1])  # a character split across chunks
                io.write("é\n".encode()[1:])
                await anyio.sleep_forever()
                raise AssertionError("unreachable")

            await service(ctx).of(agent).start("stream", "bash", work)
            await anyio.lowlevel.checkpoint()
            assert (await call(ctx, agent, "job_output", job_id="job-1")).text == "one\n[status: running]"
            assert (await call(ctx, agent, "job_output", job_id="job-1")).text == (
                "(no new output)\n[status: running]"
            )
            more.set()
            await anyio.sleep(0.01)
            assert (await call(ctx, agent, "job_output", job_id="job-1")).text == "two\né\n[status: running]"


async def test_a_wait_returns_at_settlement_and_a_timed_out_wait_leaves_the_job_running(
    tmp_path: Path,
) -> None:
    with job_host(tmp_path, wait_ms=20) as ctx:
        async with agent_of(ctx) as agent:
            release = anyio.Event()

            async def work(io: JobIO) -> JobEnd:
                await release.wait()
                return JobEnd("completed", output="the answer")

            job = await service(ctx).of(agent).start("final-output", "subagent", work)
            timed_out = await call(ctx, agent, "job_output", job_id="job-1", wait=True)  # the default: 20 ms
            assert timed_out.text == "(no result yet)\n[status: running]"
            assert job.status == "running"
            short = await call(ctx, agent, "job_output", job_id="job-1", wait=True, timeout_ms=5)
            assert short.text.endswith("[status: running]")

            async def later() -> None:
                await anyio.sleep(0.05)
                release.set()

            async with anyio.create_task_group() as group:
                group.start_soon(later)
                done = await call(ctx, agent, "job_output", job_id="job-1", wait=True, timeout_ms=10_000)
            assert done.text == "the answer\n[status: completed]"
            await settle(agent)


async def test_the_wait_is_capped_by_the_configured_maximum(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("noted")] * 5)
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(jobs_module.plugin, JobsConfig(wait_ms=10, max_wait_ms=10))
        ctx.plugin(enabler())
        async with agent_of(ctx) as agent:
            await service(ctx).of(agent).start("stream", "bash", never)
            with anyio.fail_after(5):  # an hour asked for, 10 ms served
                capped = await call(ctx, agent, "job_output", job_id="job-1", wait=True, timeout_ms=3_600_000)
            assert capped.text.endswith("[status: running]")


async def test_unknown_ids_and_another_agents_jobs_are_clear_errors(tmp_path: Path) -> None:
    with job_host(tmp_path) as ctx:
        async with agent_of(ctx) as agent, agent_of(ctx) as other:
            none_yet = await call(ctx, agent, "job_output", job_id="job-9")
            assert none_yet.is_error
            assert 'no background job "job-9"' in none_yet.text
            assert "its jobs: none" in none_yet.text
            await service(ctx).of(agent).start("stream", "bash", never)
            await service(ctx).of(agent).start("stream", "bash", never)
            for tool in ("job_output", "job_kill"):
                stranger = await call(ctx, other, tool, job_id="job-1")
                assert stranger.is_error, tool
                assert 'no background job "job-1" belongs to this agent; its jobs: none' in stranger.text
            missing = await call(ctx, agent, "job_kill", job_id="job-7")
            assert missing.is_error
            assert 'no background job "job-7"' in missing.text
            assert "its jobs: job-1, job-2" in missing.text
            listed = await call(ctx, agent, "job_list")
            assert listed.text.splitlines() == [
                "job-1  stream  bash  [status: running]",
                "job-2  stream  bash  [status: running]",
            ]
            assert (await call(ctx, other, "job_list")).text == "(no background jobs)"


async def test_job_ids_continue_from_the_log_when_an_agent_is_resumed(tmp_path: Path) -> None:
    with job_host(tmp_path) as ctx:
        async with agent_of(ctx) as agent:
            await service(ctx).of(agent).start("stream", "bash", never)
        async with ctx.get(AGENTS).resume(agent.id, OPTIONS) as again:
            job = await service(ctx).of(again).start("stream", "bash", never)
            assert job.id == "job-2"
            earlier = await call(ctx, again, "job_output", job_id="job-1")  # killed as its agent closed
            assert earlier.text == "(no new output)\n[status: killed (its agent closed)]"
            assert (
                "job-1  stream  bash  [status: killed (its agent closed)]"
                in (await call(ctx, again, "job_list")).text
            )


async def test_a_job_whose_process_died_reads_as_lost_when_its_session_is_resumed(tmp_path: Path) -> None:
    with job_host(tmp_path) as ctx:
        async with agent_of(ctx) as agent:
            # what a killed dsh leaves: the start logged, no outcome
            agent.log.append(
                JobStarted(data=JobStartedData(job_id="job-1", kind="stream", tool="bash", label="make"))
            )
        async with ctx.get(AGENTS).resume(agent.id, OPTIONS) as again:
            result = await call(ctx, again, "job_output", job_id="job-1")
            assert result.text == f"(no new output)\n[status: failed: {LOST}]"
            assert (await call(ctx, again, "job_kill", job_id="job-1")).text.startswith(
                "job job-1 had already settled"
            )
            assert (await service(ctx).of(again).start("stream", "bash", never)).id == "job-2"
        # job-2's outcome, logged as the agent closed; none is made up for job-1
        assert [e["jobId"] for e in logged(again, "job/settled")] == ["job-2"]


def test_the_job_tools_and_section_exist_only_while_a_tool_instance_enables_them(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter()) as ctx:
        ctx.plugin(jobs_module.plugin)
        tools = ctx.get(TOOLS)

        def names() -> set[str]:
            return {tool.name for tool in tools.visible()} & set(JOB_TOOLS)

        def has_section() -> bool:
            return SECTION.name in str(ctx.get(SYSTEM_PROMPT).describe())

        assert names() == set()
        assert not has_section()
        first = ctx.plugin(enabler("first"))
        second = ctx.plugin(enabler("second"))
        assert names() == set(JOB_TOOLS)
        assert has_section()
        first.unload()
        assert names() == set(JOB_TOOLS), "the second instance still has background jobs"
        second.unload()
        assert names() == set()
        assert not has_section()


def test_enabling_background_jobs_without_the_job_service_fails_to_load(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter()) as ctx, pytest.raises(ConfigError, match=r"load `use: jobs`"):
        ctx.plugin(enabler())


def test_a_wait_default_above_its_maximum_is_refused(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter()) as ctx, pytest.raises(ConfigError, match="at most max_wait_ms"):
        ctx.plugin(jobs_module.plugin, JobsConfig(wait_ms=10, max_wait_ms=5))


async def test_a_job_that_settles_while_a_turn_runs_enters_its_next_step(tmp_path: Path) -> None:
    jobs_of: list[JobService] = []

    async def start_and_wait(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        async def work(io: JobIO) -> JobEnd:
            return JobEnd("completed", exit_code=0)

        job = await jobs_of[0].of(context.agent).start("stream", "bash", work, label="quick")
        await job.wait(5)
        return ToolResult(f"{job.id} settled")

    tool = Tool(
        name="quick_job",
        description="Start a quick job.",
        parameters={"type": "object"},
        execute=start_and_wait,
    )
    adapter = ScriptedAdapter([calls(("q1", "quick_job", "{}")), text("It finished.")])
    with host(tmp_path, adapter, tool_list=[tool]) as ctx:
        ctx.plugin(jobs_module.plugin)
        ctx.plugin(enabler())
        jobs_of.append(service(ctx))
        async with agent_of(ctx) as agent:
            outcome = await agent.run("Run the quick job.")
            splices = [
                json.loads(e.data) for e in agent.log.store.events(agent.id, types=("agent/inbox/spliced",))
            ]
        assert outcome.text == "It finished."
        assert agent.log.state.last_turn == 1, "no turn of its own: it entered the running one"
        notice = next(
            s for s in splices if s.get("inserted") and s["inserted"][0]["source"]["kind"] == "job-settled"
        )
        assert notice["target"] == "next-step"
        second_request = adapter.requests[1]
        assert "Background job job-1 (bash: quick) completed with exit code 0." in str(
            second_request.messages
        )


def test_the_section_holds_the_habits_of_background_work() -> None:
    assert (SECTION.name, SECTION.order) == ("tool:jobs", 106)  # after bash's (105), as the original has it
    assert isinstance(SECTION.text, str)
    for habit in ("job id", "do not poll", "job_output", "wait: true", "job_kill"):
        assert habit in SECTION.text
