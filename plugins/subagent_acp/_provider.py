"""The `acp` subagent provider: the child is an external ACP agent process (`dsh acp`, or any agent that speaks the
Agent Client Protocol over stdio), started for one delegation and driven with the agent-client-protocol SDK's
client: initialize, a session in the workspace, one prompt; its answer is the text it streams after its last tool
call. Whatever goes wrong with the process (it cannot start, exits, answers a JSON-RPC error) is the run's error
result, never the parent's crash; leaving the run stops the process and everything it started."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any, Literal, cast

import anyio
import msgspec
from acp import PROTOCOL_VERSION, Client, RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallStart,
)
from acp.transports import default_environment
from anyio.abc import Process

from dsh.plugins.subagent import SUBAGENTS, StopReason, SubagentProvider, SubagentRequest, SubagentResult
from dsh.runtime.about import version
from dsh.runtime.jsonlines import JsonLinesTransport
from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.tools.guard import guarded

__all__ = ["AcpConfig", "AcpRun", "acp_provider", "plugin", "stop_reason"]

log = logging.getLogger("dsh.subagent_acp")

STDERR_TAIL = 2000
"""How much of the end of the agent's stderr a diagnostic quotes (characters)."""

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "completed",
    "max_tokens": "max-tokens",
    "refusal": "refusal",
    "cancelled": "aborted",
}


def stop_reason(reason: str) -> StopReason:
    """The subagent stop reason of an ACP prompt's `stopReason`: `end_turn` completed, `max_tokens` max-tokens,
    `refusal` refusal, `cancelled` aborted; `max_turn_requests` (the agent's own step limit) and anything unknown
    are errors."""
    return _STOP_REASONS.get(reason, "error")


class AcpConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`command`: the agent's argv (e.g. `[dsh, acp, --config, /abs/acp-agent.yml]`). `name`: the provider's
    registry key. `env`: variables set for the agent, over the few it inherits (HOME, LOGNAME, PATH, SHELL, TERM,
    USER): nothing else of this process's environment reaches it (an API key must be named, e.g.
    `DEEPSEEK_API_KEY: ${DEEPSEEK_API_KEY}`). `cwd`: an absolute directory the child works in (its process's
    working directory and its ACP session's `cwd`); by default the parent agent's. `permissions`: how the
    agent's permission requests are answered, `reject` (the default) or `allow`. `stop_grace_s`: how long the
    agent gets to exit once its stdin is closed, and again after SIGTERM, before it is killed."""

    command: tuple[str, ...]
    name: str = "acp"
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    permissions: Literal["reject", "allow"] = "reject"
    stop_grace_s: float = 2.0

    def __post_init__(self) -> None:
        if not self.command or not self.command[0]:
            raise ValueError("command must name the agent's executable: an argv list such as [dsh, acp]")
        if not self.name:
            raise ValueError("name must be non-empty")
        if self.cwd is not None and not Path(self.cwd).is_absolute():
            raise ValueError(f'cwd must be an absolute path, got "{self.cwd}"')
        if not self.stop_grace_s >= 0:
            raise ValueError(f"stop_grace_s must be >= 0, got {self.stop_grace_s}")


class _Client:
    """The ACP client side of one child: collects the session's message chunks, split at its tool calls (the
    answer is what it says after its last one), and answers permission requests as configured. It advertises no
    file system and no terminal, so a conforming agent asks for neither."""

    def __init__(self, permissions: Literal["reject", "allow"]) -> None:
        self.permissions = permissions
        self.session_id: str | None = None
        self.segments: list[list[str]] = [[]]

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if session_id != self.session_id:
            return
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            self.segments[-1].append(update.content.text)
        elif isinstance(update, ToolCallStart) and self.segments[-1]:
            self.segments.append([])

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        wanted = (
            ("allow_once", "allow_always")
            if self.permissions == "allow"
            else ("reject_once", "reject_always")
        )
        chosen = next((option for kind in wanted for option in options if option.kind == kind), None)
        title = getattr(tool_call, "title", None) or getattr(tool_call, "tool_call_id", "?")
        log.info("ACP subagent asked permission for %s: %s", title, chosen.kind if chosen else "cancelled")
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )

    def answer(self) -> str:
        """The text after the agent's last tool call, or else the last text it said before one."""
        return next(("".join(segment) for segment in reversed(self.segments) if "".join(segment)), "")


class AcpRun:
    """One child agent process and its ACP session. `open()` starts it (a failure is kept as the result),
    `result()` sends the prompt and waits for the answer, `close()` stops the process. `id` is the agent's
    session id (`acp:<pid>` before it has one); `agent` is None: the child is not in this process."""

    def __init__(self, config: AcpConfig, provider: str, prompt: str, workspace: Path) -> None:
        self.config = config
        self.provider = provider
        self.prompt = prompt
        self.workspace = workspace
        self.process: Process | None = None
        self.agent_name: str | None = None
        self._client = _Client(config.permissions)
        self._conn: ClientSideConnection | None = None
        self._stderr: IO[bytes] | None = None
        self._result: SubagentResult | None = None

    @property
    def id(self) -> str:
        if self._client.session_id is not None:
            return self._client.session_id
        return f"acp:{self.process.pid}" if self.process is not None else "acp:not-started"

    @property
    def agent(self) -> None:
        return None

    @property
    def session_id(self) -> str | None:
        """The child's session id in the agent's own store, once it has one."""
        return self._client.session_id

    # ------------------------------------------------------------------ starting

    async def open(self) -> None:
        """Start the process, initialize, open a session in the workspace. A failure becomes the run's result."""
        command = self.config.command
        env = default_environment() | self.config.env
        missing = _unstartable(command[0], self.workspace, env.get("PATH"))
        if missing is not None:  # the supervisor below would start, and only report exit code 127
            self._fail(f"the ACP agent could not start ({' '.join(command)}): {missing}")
            return
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115  # closed by close(), after the process is gone
        try:
            self.process = await anyio.open_process(
                guarded(list(command)),  # dies with this process, even by SIGKILL
                cwd=self.workspace,
                env=env,
                stderr=self._stderr,
                start_new_session=True,  # its own process group: stopping it stops what it started
            )
        except OSError as error:
            self._fail(f"the ACP agent could not start ({' '.join(command)}): {error}")
            return
        assert self.process.stdin is not None, "opened with a stdin pipe"
        assert self.process.stdout is not None, "opened with a stdout pipe"
        transport = JsonLinesTransport(
            self.process.stdout, self.process.stdin, answer=False, name="ACP agent"
        )
        self._conn = ClientSideConnection(cast(Client, self._client), transport)
        stage = "initialize"
        try:
            init = await self._conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False
                ),
                client_info=Implementation(name="dsh", title="dsh (subagent provider)", version=version()),
            )
            if init.protocol_version != PROTOCOL_VERSION:
                self._fail(
                    f"the ACP agent speaks protocol version {init.protocol_version}; dsh speaks {PROTOCOL_VERSION}"
                )
                return
            if init.agent_info is not None:
                self.agent_name = f"{init.agent_info.name} {init.agent_info.version}"
            stage = "session/new"
            session = await self._conn.new_session(cwd=str(self.workspace), mcp_servers=[])
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as error:
            # Contained: an agent that cannot be reached is the parent's information, never its crash.
            self._fail(await self._diagnosis(stage, error))
            return
        self._client.session_id = session.session_id

    # ------------------------------------------------------------------ running

    async def result(self) -> SubagentResult:
        """Send the prompt and wait for the answer. Cancelling the caller sends `session/cancel` and propagates;
        `close()` then stops the process."""
        if self._result is not None:
            return self._result
        conn, session_id = self._conn, self._client.session_id
        assert conn is not None, "open() either connected or kept a failure"
        assert session_id is not None, "open() either opened a session or kept a failure"
        try:
            response = await conn.prompt(session_id=session_id, prompt=[text_block(self.prompt)])
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.config.stop_grace_s):
                await conn.cancel(session_id=session_id)
            raise
        except Exception as error:
            # Contained, as above: the agent's failure (or its exit) is this run's error result.
            return self._fail(await self._diagnosis("session/prompt", error))
        reason = stop_reason(response.stop_reason)
        diagnostic = None
        if reason == "error":
            diagnostic = f"the ACP agent stopped with stopReason {response.stop_reason}"
            if response.stop_reason == "max_turn_requests":
                diagnostic += " (it made as many model requests in the turn as it allows)"
        self._result = SubagentResult(
            stop_reason=reason,
            output=self._client.answer(),
            diagnostic=diagnostic,
            meta=self._meta(stopReason=response.stop_reason),
        )
        return self._result

    def _fail(self, diagnostic: str) -> SubagentResult:
        log.warning("ACP subagent (%s): %s", self.provider, diagnostic)
        self._result = SubagentResult(
            stop_reason="error", output=self._client.answer(), diagnostic=diagnostic, meta=self._meta()
        )
        return self._result

    def _meta(self, **more: Any) -> dict[str, Any]:
        meta: dict[str, Any] = {"provider": self.provider}
        if self.agent_name is not None:
            meta["agent"] = self.agent_name
        if self._client.session_id is not None:
            meta["sessionId"] = self._client.session_id
        if self.process is not None and self.process.returncode is not None:
            meta["exitCode"] = self.process.returncode
        return meta | more

    async def _diagnosis(self, stage: str, error: BaseException) -> str:
        """What went wrong at `stage`: the JSON-RPC error the agent answered, or how its process ended (its exit
        code, when it exits within the grace period, and the end of its stderr)."""
        if isinstance(error, RequestError):
            text = f"the ACP agent answered {stage} with JSON-RPC error {error.code}: {error}"
            if error.data is not None:
                text += f" {msgspec.json.encode(error.data).decode()}"
            return text
        process = self.process
        if process is not None and isinstance(error, ConnectionError):
            with anyio.move_on_after(self.config.stop_grace_s):
                await process.wait()
            ended = (
                f"exited with code {process.returncode}"
                if process.returncode is not None
                else "closed its stdout"
            )
            text = f"the ACP agent {ended} during {stage}"
        else:
            text = f"the ACP agent failed during {stage}: {type(error).__name__}: {error}"
        tail = self._stderr_tail()
        return f"{text}; its stderr ended with:\n{tail}" if tail else text

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.flush()
        size = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, size - STDERR_TAIL * 4))
        return self._stderr.read().decode("utf-8", "replace")[-STDERR_TAIL:].strip()

    # ------------------------------------------------------------------ stopping

    async def close(self) -> None:
        """Stop the child: close the connection (the agent's stdin: an ACP agent exits at end of input), wait
        `stop_grace_s`, then SIGTERM its process group, wait again, then SIGKILL it. Shielded: it runs to the end
        even when the caller is cancelled, so no process outlives the run."""
        with anyio.CancelScope(shield=True):
            try:
                if self._conn is not None:
                    with anyio.move_on_after(self.config.stop_grace_s):
                        await self._conn.close()
                process = self.process
                if process is not None:
                    grace = self.config.stop_grace_s
                    with anyio.move_on_after(grace):
                        await process.wait()
                    for sig in (signal.SIGTERM, signal.SIGKILL):
                        if process.returncode is not None:
                            break
                        _signal_group(process, sig)
                        with anyio.move_on_after(grace if sig == signal.SIGTERM else None):
                            await process.wait()
                    await process.aclose()
            finally:
                if self._stderr is not None:
                    self._stderr.close()


def _signal_group(process: Process, sig: signal.Signals) -> None:
    """Signal the agent's process group (it leads one: `start_new_session`), so what it started stops with it."""
    with contextlib.suppress(
        ProcessLookupError
    ):  # it exited between the check and the signal: nothing to stop
        os.killpg(process.pid, sig)


def acp_provider(config: AcpConfig) -> SubagentProvider:
    """A provider whose child is an external ACP agent process: it sees nothing of the parent's conversation,
    only the prompt and the workspace."""

    @asynccontextmanager
    async def start(request: SubagentRequest) -> AsyncIterator[AcpRun]:
        workspace = (
            Path(config.cwd) if config.cwd is not None else (request.parent.cwd or Path.cwd()).absolute()
        )
        run = AcpRun(config, config.name, request.prompt, workspace)
        try:
            await run.open()
            yield run
        finally:
            await run.close()

    return SubagentProvider(name=config.name, inherits_parent_context=False, start=start)


def _apply(ctx: Context, config: AcpConfig) -> None:
    ctx.get(SUBAGENTS).register(acp_provider(config))


plugin = Plugin(
    name="subagent-acp",
    apply=_apply,
    config=AcpConfig,
    needs=(SUBAGENTS,),
    description="the acp subagent provider: a child agent in an external ACP agent process (e.g. dsh acp)",
)


def _unstartable(program: str, cwd: str | os.PathLike[str], path: str | None) -> str | None:
    """Why `program` cannot be started from `cwd` (a path is taken relative to it, a bare name is looked up on
    `path`), or None if it can."""
    if os.sep not in program:
        return None if shutil.which(program, path=path) else f"{program}: not found on PATH"
    candidate = os.path.join(cwd, program)
    if not os.path.isfile(candidate):
        return f"{program}: No such file or directory"
    return None if os.access(candidate, os.X_OK) else f"{program}: Permission denied"
