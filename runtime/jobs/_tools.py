"""The job tools, `job_output`, `job_kill` and `job_list` (the original's names, parameters and result shapes, so
recorded calls replay against them), and the jobs prompt section: the habits of an agent with background jobs. Each
tool works on the calling agent's jobs only.

The tools declare themselves `timing_dependent`: what a read returns depends on how far the job has got, so a
replay runs them (a kill still kills, a read still advances the read position, a wait still waits) and serves the
model the recorded result, which keeps every re-run's log byte-identical to the others (see `dsh.replay.driver._tools`)."""

from __future__ import annotations

from typing import Any

from dsh.runtime.prompt import PromptSection
from dsh.runtime.tools import Tool, ToolContext, ToolResult

from ._service import Job, JobService, UnknownJobError

__all__ = ["JOB_TOOLS", "SECTION", "job_tools"]

JOB_TOOLS = ("job_kill", "job_list", "job_output")

SECTION = PromptSection(
    "tool:jobs",
    106,
    "Keep track of every background job id you start. When a job finishes you are told so in this session, so "
    "do not poll it or sleep waiting for it: carry on with independent work, and do not redo what a running job "
    "is doing. Before your final answer, collect each job that still matters with job_output (pass wait: true only "
    "when you cannot go on without it) and stop the ones that no longer matter with job_kill.",
)
"""The cross-call habits of background work (track ids, no busy-polling, collect or kill before answering); what
each call does is in the tools' descriptions."""

_JOB_ID = {
    "type": "string",
    "description": "The job id returned by the tool that started the background work.",
}


def _jobs_of(service: JobService, context: ToolContext, tool: str) -> Any:
    if context.agent is None:
        return ToolResult.error("NO_CALLING_AGENT", f'the "{tool}" tool requires a calling agent')
    return service.of(context.agent)


def _job(service: JobService, arguments: dict[str, Any], context: ToolContext, tool: str) -> Job | ToolResult:
    jobs = _jobs_of(service, context, tool)
    if isinstance(jobs, ToolResult):
        return jobs
    try:
        job: Job = jobs.get(arguments["job_id"])
    except UnknownJobError as error:
        return ToolResult.error("UNKNOWN_JOB", str(error))
    return job


def read(job: Job) -> str:
    """What `job_output` shows of `job` now: a stream job's output since the previous read, a final-output job's
    result once settled; then its status line."""
    if job.kind == "stream":
        text, dropped = job.io.read()
        parts = []
        if dropped:
            parts.append(f"[{dropped} characters of earlier output dropped]")
        parts.append(text.rstrip("\n") if text else "(no new output)")
    elif job.settled:
        parts = [job.output or job.error or "(no result)"]
    else:
        parts = ["(no result yet)"]
    parts.append(job.status_line())
    return "\n".join(parts)


def job_tools(service: JobService) -> tuple[Tool, ...]:
    async def output(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        job = _job(service, arguments, context, "job_output")
        if isinstance(job, ToolResult):
            return job
        if arguments.get("wait") and not job.settled:
            limit = arguments.get("timeout_ms") or service.config.wait_ms
            await job.wait(min(float(limit), float(service.config.max_wait_ms)) / 1000)
        return ToolResult(read(job), meta={"status": job.status})

    async def kill(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        job = _job(service, arguments, context, "job_kill")
        if isinstance(job, ToolResult):
            return job
        if not job.kill(arguments.get("reason") or None):
            return ToolResult(f"job {job.id} had already settled; nothing to kill\n{job.status_line()}")
        return ToolResult(f"kill requested for job {job.id}; it settles as killed once its work has stopped")

    async def listing(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        jobs = _jobs_of(service, context, "job_list")
        if isinstance(jobs, ToolResult):
            return jobs
        lines = [
            f"{job.id}  {job.kind}  {job.tool}  {job.status_line()}  {job.label or ''}".rstrip()
            for job in jobs.all()
        ]
        return ToolResult("\n".join(lines) or "(no background jobs)")

    return (
        Tool(
            name="job_output",
            description=(
                "Read a background job. A stream job (a command) returns only the output that arrived since the "
                "previous read; a final-output job (a subagent) returns its result once it has settled. Every "
                "response ends with `[status: ...]`. A read does not block unless `wait: true`, which waits up to "
                "the configured cap."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "job_id": _JOB_ID,
                    "wait": {
                        "type": "boolean",
                        "description": "Wait until the job settles or the timeout expires. A wait that times out "
                        "returns [status: running] and leaves the job running.",
                    },
                    "timeout_ms": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "description": "The longest wait in milliseconds (with wait: true only). Defaults to the "
                        "configured wait timeout; the configured maximum caps it.",
                    },
                },
                "required": ["job_id"],
            },
            execute=output,
            timing_dependent=True,
        ),
        Tool(
            name="job_kill",
            description=(
                "Stop a running background job by its job id. Returns at once; the job settles as killed once "
                "its work has actually stopped."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "job_id": _JOB_ID,
                    "reason": {
                        "type": "string",
                        "description": "An optional short reason, logged with the job's outcome.",
                    },
                },
                "required": ["job_id"],
            },
            execute=kill,
            timing_dependent=True,
        ),
        Tool(
            name="job_list",
            description="List your background jobs, running and finished, with their ids, kinds and statuses.",
            parameters={"type": "object", "properties": {}},
            execute=listing,
            timing_dependent=True,
        ),
    )
