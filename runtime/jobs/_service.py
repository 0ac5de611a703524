"""The background jobs of agents: this module owns them. A job is work a tool started for the calling agent and
did not wait for (a `bash` command run with `run_in_background`, a one-shot subagent sent off in the background). It
belongs to that agent: it runs as the agent's background work (`Agent.start_background`), so it is cancelled, and
its processes killed, when the agent closes, and no job outlives the process (a command runs under
`dsh.runtime.tools.guard`'s supervisor, as every bash command does).

Each job has an id (`job-<n>`, numbered in its agent's log, so a re-run numbers them as the recording did), a kind
(`stream`: its output is read as it comes, each read returning what arrived since the previous one; `final-output`:
one result once it settles) and a status (`running`, then `completed`, `killed` or `failed`). Its start is logged
as `job/started` when the tool starts it; its outcome as `job/settled`, just before the settlement notice enters the
agent's inbox (queued as a subagent's report and settled notice are, with target `next`: it enters the running turn
at its next step, or starts a turn when the agent is idle), so the fact lands in the log where the agent learns it,
wherever the inbox gate admits the notice. A job killed because its agent closed is logged `job/settled{killed}` as
the agent closes, with no notice. A resumed session knows the jobs of its earlier runs from its log: their status
as logged (their output went with the process), or `failed` (`LOST`) for one logged as started and never settled,
which the log keeps as it is: that the process died is the fact, and no one saw when."""

from __future__ import annotations

import codecs
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import anyio
import msgspec
from anyio.abc import TaskStatus

from dsh.runtime.agent import Agent
from dsh.runtime.kernel import ServiceKey
from dsh.runtime.llm import JobNoticeSource, TextBlock
from dsh.runtime.session import JobKind, JobSettled, JobSettledData, JobStarted, JobStartedData

__all__ = [
    "JOBS",
    "NOTICE_SOURCE",
    "Job",
    "JobEnd",
    "JobIO",
    "JobService",
    "JobStatus",
    "JobsConfig",
    "Jobs",
    "LOST",
    "UnknownJobError",
    "Work",
]

JobStatus = Literal["running", "completed", "killed", "failed"]

NOTICE_SOURCE = str(JobNoticeSource.__struct_config__.tag)
"""The source kind of a settlement notice, as the log writes it (`job-settled`: `JobNoticeSource`)."""

LOST = "the process that ran it ended before it settled"
"""The error of a job its log shows started and never settled (dsh was killed while it ran)."""

_STREAM_CAP_CHARS = 100_000
"""Unread output a stream job keeps (its tail); what is dropped is counted and said at the next read."""


@dataclass(frozen=True)
class JobEnd:
    """What a job's work ended with: `completed` (a command's `exit_code`, a subagent's `output`) or `failed`
    (`error`, and `output` for the model: a subagent's error text)."""

    status: Literal["completed", "failed"]
    exit_code: int | None = None
    output: str | None = None
    error: str | None = None


class JobIO:
    """What a job's work writes its stream output to: kept decoded (a multi-byte character split across chunks
    survives), bounded to its unread tail."""

    __slots__ = ("_decoder", "_dropped", "_unread")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._unread: list[str] = []
        self._dropped = 0

    def write(self, chunk: bytes | str) -> None:
        text = chunk if isinstance(chunk, str) else self._decoder.decode(chunk)
        if not text:
            return
        self._unread.append(text)
        size = sum(len(part) for part in self._unread)
        if size > _STREAM_CAP_CHARS:
            joined = "".join(self._unread)
            cut = size - _STREAM_CAP_CHARS
            self._dropped += cut
            self._unread = [joined[cut:]]

    def close(self) -> None:
        self.write(self._decoder.decode(b"", final=True))

    def read(self) -> tuple[str, int]:
        """What arrived since the previous read, and how many characters of it were dropped (the cap)."""
        text, dropped = "".join(self._unread), self._dropped
        self._unread, self._dropped = [], 0
        return text, dropped


Work = Callable[[JobIO], Awaitable[JobEnd]]
"""A job's work: runs until done (returns how it ended; raising is `failed`), cancelled when it is killed."""


class Job:
    """One background job of one agent, read from its two facts: `started` (its `job/started` data: `id`, `kind`,
    the `tool` that started it, `label`) and, once it has settled, `outcome` (its `job/settled` data: `status`,
    `exit_code`, `error`, `reason` for a kill). `output` is what its work returned for the model (never logged)."""

    def __init__(self, started: JobStartedData) -> None:
        self.started = started
        self.outcome: JobSettledData | None = None
        self.output: str | None = None
        self.io = JobIO()
        self._scope = anyio.CancelScope()
        self._settled = anyio.Event()
        self._kill_reason: str | None = None

    @property
    def id(self) -> str:
        return self.started.job_id

    @property
    def kind(self) -> JobKind:
        return self.started.kind

    @property
    def tool(self) -> str:
        return self.started.tool

    @property
    def label(self) -> str | None:
        return self.started.label

    @property
    def status(self) -> JobStatus:
        return "running" if self.outcome is None else self.outcome.status

    @property
    def exit_code(self) -> int | None:
        return None if self.outcome is None else self.outcome.exit_code

    @property
    def error(self) -> str | None:
        return None if self.outcome is None else self.outcome.error

    @property
    def reason(self) -> str | None:
        return None if self.outcome is None else self.outcome.reason

    @property
    def settled(self) -> bool:
        return self.outcome is not None

    def kill(self, reason: str | None = None) -> bool:
        """Ask the job to stop (returns at once; it settles as killed once its work has stopped). False: it had
        already settled."""
        if self.settled:
            return False
        if not self._scope.cancel_called:
            self._kill_reason = reason
            self._scope.cancel()
        return True

    async def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for the job to settle; whether it has."""
        with anyio.move_on_after(seconds):
            await self._settled.wait()
        return self.settled

    def status_line(self) -> str:
        """`[status: ...]`, the line every read ends with."""
        if self.status == "completed" and self.exit_code is not None:
            return f"[status: completed, exit code: {self.exit_code}]"
        if self.status == "killed" and self.reason:
            return f"[status: killed ({self.reason})]"
        if self.status == "failed" and self.error and self.kind == "stream":
            return f"[status: failed: {self.error}]"
        return f"[status: {self.status}]"

    def summary(self) -> str:
        """One line for the settlement notice and `job_list`."""
        what = f"Background job {self.id} ({self.tool}{f': {self.label}' if self.label else ''})"
        if self.status == "running":
            return f"{what} is running."
        if self.status == "completed":
            code = "" if self.exit_code is None else f" with exit code {self.exit_code}"
            return f"{what} completed{code}."
        if self.status == "killed":
            return f"{what} was killed{f' ({self.reason})' if self.reason else ''}."
        return f"{what} failed{f': {self.error}' if self.error and self.kind == 'stream' else ''}."

    def _settle(
        self,
        status: Literal["completed", "killed", "failed"],
        end: JobEnd | None = None,
        *,
        reason: str | None = None,
    ) -> None:
        self.outcome = JobSettledData(
            job_id=self.id,
            status=status,
            exit_code=None if end is None else end.exit_code,
            error=None if end is None else end.error,
            reason=reason,
        )
        self.output = None if end is None else end.output
        self.io.close()
        self._settled.set()

    def settled_event(self) -> JobSettled:
        assert self.outcome is not None, "a running job has no job/settled"
        return JobSettled(data=self.outcome)

    def __repr__(self) -> str:
        return f"Job({self.id!r}, {self.kind}, {self.status})"


class UnknownJobError(LookupError):
    """No job of that id belongs to the calling agent; the message names the id and the agent's jobs."""


class Jobs:
    """The background jobs of one agent, in start order."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._jobs: dict[str, Job] = {}
        # the jobs of earlier runs of this session, from its log (numbered on from them, so a resumed session never
        # reuses an id): settled as logged, or lost with the process that ran them when their outcome never was
        for event in agent.log.store.events(agent.id, types=(JobStarted, JobSettled)):
            value = event.view()
            if isinstance(value, JobStarted):
                earlier = self._jobs[value.data.job_id] = Job(value.data)
                earlier._settle("failed", JobEnd("failed", error=LOST))
            elif (
                isinstance(value, JobSettled)
                and (earlier_job := self._jobs.get(value.data.job_id)) is not None
            ):
                earlier_job.outcome = value.data
        self._count = len(self._jobs)

    def all(self) -> list[Job]:
        return list(self._jobs.values())

    def get(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            known = ", ".join(self._jobs) or "none"
            raise UnknownJobError(f'no background job "{job_id}" belongs to this agent; its jobs: {known}')
        return job

    async def start(
        self,
        kind: JobKind,
        tool: str,
        work: Work,
        *,
        label: str | None = None,
        call_id: str | None = None,
        turn: int = 0,
        step: int = 0,
    ) -> Job:
        """Log `job/started` and run `work` in the agent's background; returns the running job at once."""
        self._count += 1
        started = JobStartedData(
            job_id=f"job-{self._count}",
            kind=kind,
            tool=tool,
            call_id=call_id,
            turn=turn,
            step=step,
            label=label,
        )
        job = self._jobs[started.job_id] = Job(started)
        await self.agent.append(JobStarted(data=started))
        await self.agent.start_background(self._run, job, work)
        return job

    async def _run(self, job: Job, work: Work, *, task_status: TaskStatus[None]) -> None:
        agent = self.agent
        task_status.started()
        logged = False
        try:
            end: JobEnd | None = None
            failure: str | None = None
            with job._scope:
                try:
                    end = await work(job.io)
                except anyio.get_cancelled_exc_class():
                    raise
                except Exception as error:  # contained: a job that breaks is its agent's information
                    failure = f"{type(error).__name__}: {error}"
            if job._scope.cancelled_caught or (end is None and failure is None):
                job._settle("killed", reason=job._kill_reason)
            elif end is not None:
                job._settle(end.status, end)
            else:
                job._settle("failed", JobEnd("failed", error=failure, output=f"Error: {failure}"))
            summary = job.summary()
            await agent.queue(
                (TextBlock(f"{summary} Read it with job_output (job_id {job.id})."),),
                target="next",
                source=JobNoticeSource(form="notice", summary=summary, job_id=job.id),
                before=job.settled_event(),
            )
            logged = True
        finally:
            if not logged:
                # cancelled with its agent (or while its notice waited): the outcome is still logged, as the agent
                # closes, unless it already was (the notice was cut off after it); the log is flushed after its
                # background work has stopped
                if not job.settled:
                    job._settle("killed", reason="its agent closed")
                if job.id not in agent.state.settled_jobs:
                    agent.log.append(job.settled_event())


class JobsConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How long `job_output` with `wait` waits: `wait_ms` by default, never more than `max_wait_ms`."""

    wait_ms: int = 30_000
    max_wait_ms: int = 600_000


class JobService:
    """Every agent's jobs (`of(agent)`), and the job tools: registered while at least one tool instance has
    background jobs enabled (`enable`), with the jobs prompt section."""

    def __init__(self, config: JobsConfig, mount: Callable[[], Callable[[], None]]) -> None:
        self.config = config
        self._agents: dict[str, Jobs] = {}
        self._mount = mount
        self._enabled = 0
        self._unmount: Callable[[], None] | None = None

    def of(self, agent: Agent) -> Jobs:
        jobs = self._agents.get(agent.id)
        if jobs is None or jobs.agent is not agent:
            jobs = self._agents[agent.id] = Jobs(agent)

            def forget(jobs: Jobs = jobs) -> None:
                if self._agents.get(agent.id) is jobs:
                    del self._agents[agent.id]

            agent.ctx.effect(forget)  # the agent's scope is disposed as it closes
        return jobs

    def running(self) -> list[tuple[str, Job]]:
        """Every job still running, with the session id of the agent it belongs to (a replay's inbox gate asks:
        a running job may still queue its notice)."""
        return [(owner, job) for owner, jobs in self._agents.items() for job in jobs.all() if not job.settled]

    def enable(self) -> Callable[[], None]:
        """Count one more tool instance with background jobs; the job tools exist while the count is above zero.
        The returned disposer (idempotent) takes it back."""
        self._enabled += 1
        if self._unmount is None:
            self._unmount = self._mount()
        done = False

        def disable() -> None:
            nonlocal done
            if done:
                return
            done = True
            self._enabled -= 1
            if self._enabled == 0 and self._unmount is not None:
                unmount, self._unmount = self._unmount, None
                unmount()

        return disable

    @property
    def enabled(self) -> bool:
        return self._enabled > 0


JOBS = ServiceKey[JobService]("jobs")
"""The job service (`dsh.runtime.jobs`'s plugin provides it)."""
