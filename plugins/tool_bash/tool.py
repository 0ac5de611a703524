"""The `bash` tool: its description and schema (names as the original's, so recorded sessions replay), the result
text with its markers, the plugin and its config (timeouts, output cap, the environment policy and the sandbox)."""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
from pathlib import Path
from typing import Any, cast

import anyio
import msgspec

from dsh.runtime.jobs import JobEnd, JobIO, JobService, background_jobs
from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.prompt import SYSTEM_PROMPT, AssembleContext, PromptContext, PromptSection
from dsh.runtime.session import SandboxMode, SessionLog
from dsh.runtime.tools import TOOL_ENV, TOOLS, EnvPolicy, Tool, ToolContext, ToolEnvironment, ToolResult
from dsh.runtime.tools.guard import Limits

from .sandbox import POLICIES, Policy, Sandbox, SandboxUnavailableError, policy_text
from .shell import ShellOutcome, Sink, TailBuffer, run_background, run_shell

__all__ = [
    "DESCRIPTION",
    "SANDBOX_CONTEXT",
    "SECTION",
    "BashConfig",
    "EnvConfig",
    "LimitsConfig",
    "format_outcome",
    "limit_note",
    "plugin",
]

SANDBOX_CONTEXT = "sandbox:policy"
"""The runtime context (order 110, as the original's) stating a sandboxed policy to the model."""

DESCRIPTION = (
    "Run a command with `bash -c` and return what it printed. Every call starts a fresh shell in the workspace: "
    "nothing (working directory, variables, functions) carries over between calls, so pass `workdir` rather than "
    "running `cd`. stdout comes first; stderr follows under a `[stderr]` line. A non-zero exit adds "
    "`[exit code: N]` as the last line, a timeout adds `[timed out after <n>ms]`, and death by a signal adds "
    "`[killed by signal: NAME]`. Long output is cut to its tail, with a note saying how much was dropped. "
    "Prefer the dedicated file tools for reading, writing, editing and searching files."
)
BACKGROUND_DESCRIPTION = (
    " Set `run_in_background: true` for a long-running command: the call returns a job id at once; read its "
    "output with `job_output` and stop it with `job_kill`."
)
"""What DESCRIPTION adds when `run_in_background` is enabled."""

ESCALATION_DESCRIPTION = (
    " When the sandbox denied a command, you may retry that exact command once with `sandbox_permissions` (the "
    "narrowest wider sandbox mode that suffices) and a one-sentence `justification`; the user is asked to approve it."
)
"""What DESCRIPTION adds when escalation is enabled."""

ESCALATION_PARAMETERS: dict[str, Any] = {
    "sandbox_permissions": {
        "type": "string",
        "enum": ["read-only", "workspace-write", "danger-full-access"],
        "description": "Only as a one-shot retry of a command the sandbox just denied: the narrowest wider sandbox "
        "mode that would let it through. Requires justification; the user is asked to approve it once.",
    },
    "justification": {
        "type": "string",
        "description": "One-sentence reason for the escalated retry. Required whenever sandbox_permissions is set.",
    },
}
"""The original's escalation parameters (declared when escalation is enabled)."""

BACKGROUND_PARAMETER: dict[str, Any] = {
    "type": "boolean",
    "description": "Run in the background and return a job id at once (read it with job_output, stop it with "
    "job_kill). No timeout applies.",
}

SECTION = PromptSection(
    "tool:bash",
    105,
    "After every bash call, look for the `[exit code: N]` marker before trusting the output; when a command "
    "failed, find out why before moving on.",
)
"""The cross-call habit a single call's description cannot carry (check every result's exit code); what a call does
lives in DESCRIPTION."""

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "minLength": 1, "description": "The bash command to run."},
        "description": {
            "type": "string",
            "minLength": 1,
            "description": "What the command does, in 5-10 words of active voice (shown to the user), "
            'e.g. "List files in the workspace".',
        },
        "timeoutMs": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Timeout in milliseconds; the configured default applies when omitted, and the "
            "configured maximum caps it. The command is killed when it expires.",
        },
        "workdir": {
            "type": "string",
            "description": "Directory to run in; defaults to the workspace, and a relative path is resolved "
            "against it.",
        },
    },
    "required": ["command", "description"],
}


class EnvConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What commands inherit beyond the default policy: `allow` keeps variables the credential patterns would
    withhold, `deny` withholds more (names or `*`/`?` patterns; see `dsh.runtime.tools.EnvPolicy`)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.policy()  # validates every entry

    def policy(self) -> EnvPolicy:
        return EnvPolicy(allow=self.allow, deny=self.deny)


_MIB = 1 << 20


class LimitsConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What one command (a call, or a background job) may use; `null` turns a limit off. The defaults stop a fork
    bomb and a memory hog within a second and leave ordinary builds and test runs alone."""

    processes: int | None = 512
    """Live processes in the command's tree at once; past it the tree is killed."""
    memory_mb: int | None = 2048
    """MiB each process may allocate (`RLIMIT_DATA`: an allocation past it fails), and the resident memory of the
    whole tree (past it the tree is killed)."""
    file_size_mb: int | None = 1024
    """MiB one file written by the command may reach (`RLIMIT_FSIZE`: the writer gets SIGXFSZ)."""
    cpu_seconds: int | None = 600
    """CPU seconds each process may use (`RLIMIT_CPU`: SIGXCPU); mostly for background jobs, which have no
    timeout."""

    def __post_init__(self) -> None:
        for name in ("processes", "memory_mb", "file_size_mb", "cpu_seconds"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise msgspec.ValidationError(f"`limits.{name}` must be positive, or null for no limit")

    def limits(self) -> Limits | None:
        """As the supervisor takes them; None when every limit is off."""
        if (self.processes, self.memory_mb, self.file_size_mb, self.cpu_seconds) == (None, None, None, None):
            return None
        return Limits(
            processes=self.processes,
            memory=self.memory_mb * _MIB if self.memory_mb is not None else None,
            file_size=self.file_size_mb * _MIB if self.file_size_mb is not None else None,
            cpu=self.cpu_seconds,
        )


_ALLOCATION_FAILED = ("Cannot allocate memory", "MemoryError", "out of memory", "bad_alloc", "Out of memory")
"""What a command's stderr says when an allocation failed, perhaps at the memory limit."""


def limit_note(limits: LimitsConfig, returncode: int, exceeded: str | None, stderr: str) -> str | None:
    """The line saying which limit stopped the command, if one did (or, for a failed allocation, may have)."""
    if exceeded == "processes":
        return (
            f"[limit: the command was killed: it ran more than {limits.processes} processes at once "
            "(limits.processes)]"
        )
    if exceeded == "memory":
        return (
            f"[limit: the command was killed: its processes held more than {limits.memory_mb} MiB of memory "
            "(limits.memory_mb)]"
        )
    if limits.file_size_mb is not None and returncode in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ):
        return (
            f"[limit: a file reached the {limits.file_size_mb} MiB file-size limit (limits.file_size_mb); the "
            "process writing it was stopped]"
        )
    if limits.cpu_seconds is not None and returncode in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
        return f"[limit: a process used its {limits.cpu_seconds} s of CPU time (limits.cpu_seconds) and was stopped]"
    if (
        limits.memory_mb is not None
        and returncode != 0
        and any(mark in stderr for mark in _ALLOCATION_FAILED)
    ):
        return (
            f"[limit: each process may allocate at most {limits.memory_mb} MiB (limits.memory_mb); an allocation "
            "past it fails]"
        )
    return None


class BashConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`timeout_ms`: the default per call; `max_timeout_ms`: the cap on `timeoutMs`; `output_cap_bytes`: the
    tail kept of each stream; `env`: the environment policy's additions; `sandbox`: the file policy each command
    runs under (a session's `sandbox/mode` events override it); `sandbox_network`: whether a sandboxed command may use
    the network; `run_in_background`: whether a call may run its command as a background job (needs
    `dsh.runtime.jobs`); `escalation`: whether a call may ask, through an approval, to run under a wider sandbox mode
    (`sandbox_permissions` + `justification`, the original's parameters); `limits`: what each command may use."""

    timeout_ms: int = 120_000
    max_timeout_ms: int = 600_000
    output_cap_bytes: int = 30_000
    env: EnvConfig = EnvConfig()
    sandbox: str = "danger-full-access"
    sandbox_network: bool = False
    run_in_background: bool = False
    escalation: bool = False
    limits: LimitsConfig = LimitsConfig()

    @property
    def policy(self) -> Policy:
        return cast(Policy, self.sandbox)  # checked in __post_init__

    def __post_init__(self) -> None:
        if self.sandbox not in POLICIES:
            valid = ", ".join(f'"{policy}"' for policy in POLICIES)
            raise msgspec.ValidationError(f'`sandbox` is "{self.sandbox}"; the file policies are {valid}')
        for name in ("timeout_ms", "max_timeout_ms", "output_cap_bytes"):
            if getattr(self, name) <= 0:
                raise msgspec.ValidationError(f"`{name}` must be positive")
        if self.timeout_ms > self.max_timeout_ms:
            raise msgspec.ValidationError("`timeout_ms` must not exceed `max_timeout_ms`")


def _stream_text(buffer: TailBuffer) -> str:
    text = buffer.text()
    if buffer.dropped:
        text = f"[output truncated: the first {buffer.dropped} of {buffer.total} bytes were dropped]\n{text}"
    return text


def format_outcome(
    outcome: ShellOutcome,
    *,
    timeout_ms: int,
    sandbox: Sandbox | None = None,
    limits: LimitsConfig | None = None,
) -> str:
    """stdout, then `[stderr]` and stderr, or `(no output)`; then the markers (under a sandbox, a failed command's
    says what the sandbox blocks; a limit that stopped it is named), the exit code last."""
    text = _stream_text(outcome.stdout)
    if outcome.stderr.total:
        if text and not text.endswith("\n"):
            text += "\n"
        text += "[stderr]\n" + _stream_text(outcome.stderr)
    if not text:
        text = "(no output)"
    markers = []
    if outcome.timed_out:
        markers.append(f"[timed out after {timeout_ms}ms]")
    note = None
    if limits is not None and not outcome.timed_out:
        note = limit_note(limits, outcome.returncode, outcome.exceeded, outcome.stderr.text())
        if note is not None:
            markers.append(note)
    if sandbox is not None and outcome.returncode != 0 and not outcome.timed_out and note is None:
        markers.append(sandbox.refusal_note())
    if outcome.returncode < 0:
        markers.append(f"[killed by signal: {signal.Signals(-outcome.returncode).name}]")
    elif outcome.returncode > 0:
        markers.append(f"[exit code: {outcome.returncode}]")
    if markers:
        text = text + ("" if text.endswith("\n") else "\n") + "\n".join(markers)
    return text


class _Tee:
    """A sink writing to two."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: Sink, second: Sink) -> None:
        self._first, self._second = first, second

    def write(self, chunk: bytes) -> None:
        self._first.write(chunk)
        self._second.write(chunk)


def _no_workdir(workdir: Path) -> ToolResult:
    return ToolResult.error("WORKDIR_NOT_FOUND", f"workdir {workdir} does not exist or is not a directory")


def session_mode(log: SessionLog | None) -> Policy | None:
    """The sandbox mode the session's log last set (`sandbox/mode`), None when it set none."""
    if log is None:
        return None
    mode = None
    for event in log.store.events(log.info.id, types=(SandboxMode,)):
        view = event.view()
        if isinstance(view, SandboxMode) and view.data.mode in POLICIES:
            mode = view.data.mode
    return mode


def _wider(mode: Policy, than: Policy) -> bool:
    return POLICIES.index(mode) < POLICIES.index(than)  # POLICIES is widest first


class _Sandboxes:
    """The sandbox of each mode, checked the first time a session runs under it (no silent fallback: a mode whose
    sandbox cannot be had here is an error result, never an unconfined command)."""

    def __init__(self, config: BashConfig, plugin: str, configured: Sandbox | None) -> None:
        self._config = config
        self._plugin = plugin
        self._made: dict[Policy, Sandbox | None] = {"danger-full-access": None}
        if configured is not None:
            self._made[configured.policy] = configured

    def mode(self, context: ToolContext, arguments: dict[str, Any] | None = None) -> Policy:
        """The mode a call runs under: the session's, else the config's; an approved escalation's when wider."""
        mode = session_mode(context.log) or self._config.policy
        requested = (arguments or {}).get("sandbox_permissions")
        if context.approved and requested in POLICIES and _wider(cast(Policy, requested), mode):
            return cast(Policy, requested)
        return mode

    async def of(self, mode: Policy) -> Sandbox | None:
        if mode not in self._made:  # the check runs bubblewrap once: off the event loop
            self._made[mode] = await anyio.to_thread.run_sync(
                functools.partial(
                    Sandbox.check, mode, network=self._config.sandbox_network, plugin=self._plugin
                )
            )
        return self._made[mode]

    def escalation(self, arguments: dict[str, Any], context: ToolContext) -> str | None:
        """The approval reason of a call asking for a wider mode than its session's (None: it asks for none)."""
        requested = arguments.get("sandbox_permissions")
        if requested not in POLICIES:
            return None
        if not _wider(cast(Policy, requested), self.mode(dataclasses.replace(context, approved=False))):
            return None
        justification = arguments.get("justification")
        reason = f"escalate sandbox to {requested}"
        return f"{reason}: {justification}" if isinstance(justification, str) and justification else reason


def _make_tool(
    config: BashConfig,
    environment: ToolEnvironment,
    sandboxes: _Sandboxes,
    jobs: JobService | None,
) -> Tool:
    env_policy = config.env.policy()
    limits = config.limits.limits()

    async def background(arguments: dict[str, Any], context: ToolContext, workdir: Path) -> ToolResult:
        sandbox = await sandboxes.of(sandboxes.mode(context, arguments))
        if jobs is None:
            return ToolResult.error(
                "INVALID_ARGUMENTS",
                'run_in_background is disabled for this tool instance ("bash"); call it again without '
                "run_in_background and wait for the result",
            )
        if context.agent is None:
            return ToolResult.error("NO_CALLING_AGENT", "a background bash job requires a calling agent")
        command = arguments["command"]
        env = environment.child_env(os.environ, env_policy)

        async def work(io: JobIO) -> JobEnd:
            tail = TailBuffer(4096)  # the last output, where an allocation failure would be told
            code, exceeded = await run_background(
                command,
                cwd=workdir,
                sink=_Tee(io, tail),
                env=env,
                sandbox=sandbox,
                workspace=context.cwd,
                limits=limits,
            )
            note = limit_note(config.limits, code, exceeded, tail.text())
            if note is not None:
                io.write(f"\n{note}\n".encode())
            return JobEnd("completed", exit_code=code)

        job = await jobs.of(context.agent).start(
            "stream",
            "bash",
            work,
            label=arguments["description"] or command,
            call_id=context.call_id,
            turn=context.turn,
            step=context.step,
        )
        return ToolResult(
            f"started background job {job.id}; read its output with job_output, stop it with job_kill",
            meta={"jobId": job.id},
        )

    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        timeout_ms = int(min(arguments.get("timeoutMs", config.timeout_ms), config.max_timeout_ms))
        workdir = context.cwd / Path(arguments.get("workdir", "."))
        if arguments.get("run_in_background"):
            # nothing awaits before the job is started, so sibling calls of one step number their jobs in call
            # order, however their threads and processes are scheduled: the workdir is checked synchronously
            if not workdir.is_dir():
                return _no_workdir(workdir)
            return await background(arguments, context, workdir)
        if not await anyio.Path(workdir).is_dir():
            return _no_workdir(workdir)
        try:
            sandbox = await sandboxes.of(sandboxes.mode(context, arguments))
        except SandboxUnavailableError as error:
            return ToolResult.error("SANDBOX_UNAVAILABLE", str(error))
        outcome = await run_shell(
            arguments["command"],
            cwd=workdir,
            limit_seconds=timeout_ms / 1000,
            cap=config.output_cap_bytes,
            env=environment.child_env(os.environ, env_policy),  # read per call: plugins declare secrets later
            sandbox=sandbox,
            workspace=context.cwd,
            limits=limits,
        )
        return ToolResult(
            format_outcome(outcome, timeout_ms=timeout_ms, sandbox=sandbox, limits=config.limits),
            meta={"exitCode": outcome.returncode, "timedOut": outcome.timed_out},
        )

    description, properties = DESCRIPTION, dict(PARAMETERS["properties"])
    if jobs is not None:
        description += BACKGROUND_DESCRIPTION
        properties["run_in_background"] = BACKGROUND_PARAMETER
    if config.escalation:
        description += ESCALATION_DESCRIPTION
        properties.update(ESCALATION_PARAMETERS)
    return Tool(
        name="bash",
        description=description,
        parameters={**PARAMETERS, "properties": properties},
        execute=execute,
        approval=sandboxes.escalation if config.escalation else None,
    )


def _apply(ctx: Context, config: BashConfig) -> None:
    sandbox = None
    if config.policy != "danger-full-access":
        # Checked now, so a deployment that asks for a sandbox it cannot have fails to load instead of running
        # commands unconfined.
        sandbox = Sandbox.check(config.policy, network=config.sandbox_network, plugin=ctx.plugin_id)
    jobs = background_jobs(ctx, tool="bash") if config.run_in_background else None
    sandboxes = _Sandboxes(config, ctx.plugin_id, sandbox)
    ctx.get(TOOLS).register(_make_tool(config, ctx.get(TOOL_ENV), sandboxes, jobs))
    prompt = ctx.get(SYSTEM_PROMPT)
    prompt.section(SECTION)

    def stated(context: AssembleContext) -> str:
        # a session's own mode (`sandbox/mode`) wins over the config's; full access is not stated
        mode = session_mode(getattr(context.agent, "log", None)) or config.policy
        return "" if mode == "danger-full-access" else policy_text(mode, network=config.sandbox_network)

    prompt.context(PromptContext(SANDBOX_CONTEXT, 110, stated))


plugin = Plugin(
    name="tool-bash",
    apply=_apply,
    config=BashConfig,
    needs=(SYSTEM_PROMPT, TOOLS, TOOL_ENV),
    description="the bash tool, its tool:bash prompt section and, under a sandbox, the sandbox:policy context",
)
