"""Running one shell command: a fresh `bash -c` (under the sandbox, when there is one) in its own process group,
under the supervisor that kills it when dsh dies, both streams read with a bounded tail, a timeout, and the whole
group killed on timeout or cancellation so nothing outlives the call. A background command (`run_background`) is
run the same way with no timeout, its output (both streams, as they arrive) handed to a sink, until it exits or is
cancelled (killed)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import ByteReceiveStream, Process

from dsh.runtime.tools.guard import Limits, guarded

from .sandbox import Sandbox

__all__ = ["ShellOutcome", "Sink", "TailBuffer", "run_background", "run_shell"]

_GRACE_SECONDS = 0.25
_GONE_SECONDS = 1.0


class Sink(Protocol):
    """Where a stream's bytes go."""

    def write(self, chunk: bytes) -> None: ...


class TailBuffer:
    """Keeps the last `cap` bytes written to it and counts everything, so a flood costs bounded memory."""

    __slots__ = ("_data", "cap", "total")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0
        self._data = bytearray()

    def write(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._data += chunk
        if len(self._data) > self.cap:
            del self._data[: len(self._data) - self.cap]

    @property
    def dropped(self) -> int:
        return self.total - len(self._data)

    def text(self) -> str:
        # A cut may land inside a multi-byte character; replacement keeps the tail readable.
        return self._data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class ShellOutcome:
    """What happened: the kept tails of both streams (and how many bytes each lost), the exit status (negative
    for a signal, as subprocess reports it), whether the timeout fired, and the limit (`processes` or `memory`) for
    which the supervisor killed the command's tree, if it did."""

    stdout: TailBuffer
    stderr: TailBuffer
    returncode: int
    timed_out: bool
    exceeded: str | None = None


async def _drain(stream: ByteReceiveStream | None, sink: Sink) -> None:
    if stream is None:
        return
    async for chunk in stream:
        sink.write(chunk)


async def _collect(running: _Running, stdout: Sink, stderr: Sink) -> None:
    """Read both streams until the shell exits. A background child may keep the pipes open after that: its
    output is read for a short grace period, then the rest of the group is killed, so no call leaves orphans."""
    drained = anyio.Event()
    drains = anyio.CancelScope()

    async def drain_both() -> None:
        with drains:
            async with anyio.create_task_group() as streams:
                streams.start_soon(_drain, process.stdout, stdout)
                streams.start_soon(_drain, process.stderr, stderr)
        drained.set()

    process = running.process
    async with anyio.create_task_group() as group:
        group.start_soon(drain_both)
        await process.wait()
        with anyio.move_on_after(_GRACE_SECONDS):
            await drained.wait()
        if not drained.is_set():
            running.kill()
        drains.cancel()


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group already exited: nothing left to kill
        os.killpg(group, signal.SIGKILL)


class _Running:
    """A started command: its process (the supervisor), and the read end of the pipe on which the supervisor names
    the command's own process group and a limit it enforced."""

    def __init__(self, process: Process, report: int | None) -> None:
        self.process, self.report = process, report
        self._lines: list[str] = []
        if report is not None:
            os.set_blocking(report, False)

    def _read(self) -> list[str]:
        if self.report is not None:
            with contextlib.suppress(BlockingIOError, OSError):  # nothing more written yet
                while data := os.read(self.report, 4096):
                    self._lines += data.decode(errors="replace").split()
        return self._lines

    @property
    def group(self) -> int | None:
        """The command's own process group (its first process's pid), once the supervisor has named it."""
        lines = self._read()
        return int(lines[lines.index("group") + 1]) if "group" in lines else None

    def kill(self) -> None:
        """Kill the supervisor's group and the command's (a whole group at once: a fork bomb cannot outrun it)."""
        _kill_group(self.process.pid)
        if self.group is not None:
            _kill_group(self.group)

    async def gone(self) -> None:
        """Wait (a second at most) until the command's first process has died: killed, it may not have run yet."""
        if self.group is None:
            return
        with anyio.move_on_after(_GONE_SECONDS):
            while _running_pid(self.group):  # noqa: ASYNC110 (a process ending fires no event we could await)
                await anyio.sleep(0.005)

    def exceeded(self) -> str | None:
        """The limit the supervisor killed the tree for; asked once the process has exited (it wrote first)."""
        return next((word for word in self._read() if word in ("processes", "memory")), None)


def _argv(
    command: str,
    cwd: Path,
    sandbox: Sandbox | None,
    workspace: Path | None,
    limits: Limits | None,
    report_fd: int | None,
) -> list[str]:
    argv = ["bash", "-c", command]
    if sandbox is not None:
        argv = sandbox.argv(argv, workspace=workspace or cwd, workdir=cwd)
    return guarded(argv, limits, report_fd)


async def _stop(running: _Running) -> None:
    running.kill()
    with anyio.CancelScope(shield=True):
        await running.process.wait()
        await running.gone()


def _running_pid(pid: int) -> bool:
    """Whether `pid` is a process that has not died yet (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z"


@contextlib.asynccontextmanager
async def _running(
    command: str,
    cwd: Path,
    env: Mapping[str, str] | None,
    sandbox: Sandbox | None,
    workspace: Path | None,
    limits: Limits | None,
) -> AsyncIterator[_Running]:
    """`command` running with `bash -c` in `cwd` (confined by `sandbox` when given, within `limits`), in its own
    process group so killpg reaches every descendant; on any exception (a cancellation) the group is killed, and the
    process is always reaped."""
    read_end = write_end = None
    if guarded(["true"]) != ["true"]:  # the supervisor runs here: it reports on a pipe
        read_end, write_end = os.pipe()
    try:
        process = await anyio.open_process(
            _argv(command, cwd, sandbox, workspace, limits, write_end),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=(write_end,) if write_end is not None else (),
        )
    except BaseException:
        if read_end is not None:
            os.close(read_end)
        raise
    finally:
        if write_end is not None:
            os.close(write_end)
    running = _Running(process, read_end)
    try:
        yield running
    except BaseException:
        await _stop(running)
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()
        if read_end is not None:
            os.close(read_end)


def _status(process: Process) -> int:
    return process.returncode if process.returncode is not None else -signal.SIGKILL


async def run_background(
    command: str,
    *,
    cwd: Path,
    sink: Sink,
    env: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
    workspace: Path | None = None,
    limits: Limits | None = None,
) -> tuple[int, str | None]:
    """Run `command` as `run_shell` does, with no timeout, writing both streams to `sink` as they arrive; return
    its exit status (negative for a signal) and the limit the supervisor killed it for, if any. Cancelled (the job
    killed, its agent closed), the group is killed and the cancellation propagates; when dsh dies, the supervisor
    kills it."""
    async with _running(command, cwd, env, sandbox, workspace, limits) as running:
        await _collect(running, sink, sink)
        exceeded = running.exceeded()
    return _status(running.process), exceeded


async def run_shell(
    command: str,
    *,
    cwd: Path,
    limit_seconds: float,
    cap: int,
    env: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
    workspace: Path | None = None,
    limits: Limits | None = None,
) -> ShellOutcome:
    """Run `command` with `bash -c` in `cwd`, confined by `sandbox` (to `workspace`, `cwd` by default) when given.
    Within `limits` when given (the outcome names a limit the supervisor enforced). After `limit_seconds` the process group is
    killed and the outcome says so; on cancellation the group is killed
    and the cancellation propagates; when dsh dies, the supervisor kills it."""
    stdout, stderr = TailBuffer(cap), TailBuffer(cap)
    async with _running(command, cwd, env, sandbox, workspace, limits) as running:
        with anyio.move_on_after(limit_seconds) as deadline:
            await _collect(running, stdout, stderr)
        if deadline.cancelled_caught:
            await _stop(running)
        exceeded = running.exceeded()
    return ShellOutcome(stdout, stderr, _status(running.process), deadline.cancelled_caught, exceeded)
