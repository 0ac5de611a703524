"""Every command runs within limits: a fork bomb and a memory hog are stopped (with and without the sandbox), a file
cannot pass the file-size limit, a spinning process its CPU time, and the result names the limit; and nothing a
command starts outlives it, `setsid nohup` included."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import msgspec
import pytest

from dsh.plugins.tool_bash import plugin
from dsh.runtime.kernel import ConfigError, Context
from dsh.runtime.tools.guard import SUPPORTED

from ..tool_host import tool_host
from .test_bash import alive, assert_dies, bash

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not SUPPORTED, reason="the supervisor is Linux-only")]

POLICIES = ["danger-full-access", "workspace-write"]


def host(**config: object) -> Context:
    ctx = tool_host()
    ctx.plugin(plugin, config)
    return ctx


def running_with(marker: str) -> list[int]:
    """The processes whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline and alive(int(entry)):
                found.append(int(entry))
    return found


def unique_seconds(whole: int) -> str:
    """A sleep length no other test's process has (tests run in parallel workers, and `running_with` looks at the
    whole machine): `whole` seconds and a fraction unique to this run."""
    return f"{whole}.{os.getpid()}{next(_RUNS):03d}"


_RUNS = itertools.count(1)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.mark.parametrize("policy", POLICIES)
async def test_a_fork_bomb_is_stopped_at_the_default_process_limit(workspace: Path, policy: str) -> None:
    # Exponential, but bounded (2^11 processes at most, so a failure cannot exhaust the machine's pids); the
    # default limit is 512.
    seconds = unique_seconds(31)
    bomb = f"f(){{ [ $1 -lt 10 ] && {{ f $(($1+1)) & f $(($1+1)) & }}; sleep {seconds}; }}; f 0"
    result = await bash(host(sandbox=policy), workspace, bomb, timeoutMs=60_000)
    assert "[limit: the command was killed: it ran more than 512 processes at once (limits.processes)]" in (
        result.text
    )
    assert "[killed by signal: SIGKILL]" in result.text
    assert running_with(seconds) == []


@pytest.mark.parametrize("policy", POLICIES)
async def test_a_three_gigabyte_allocation_fails_at_the_default_memory_limit(
    workspace: Path, policy: str
) -> None:
    hog = f"{sys.executable} -c 'b = bytearray(3 << 30); print(len(b))'"
    result = await bash(host(sandbox=policy), workspace, hog, timeoutMs=60_000)
    assert "MemoryError" in result.text
    assert (
        "[limit: each process may allocate at most 2048 MiB (limits.memory_mb); an allocation past it fails]"
        in (result.text)
    )
    assert result.text.endswith("[exit code: 1]")


@pytest.mark.parametrize("policy", POLICIES)
async def test_a_tree_holding_too_much_memory_is_killed(workspace: Path, policy: str) -> None:
    # Four processes of 80 MiB each (every page written), each within the per-process limit, 320 MiB together.
    seconds = unique_seconds(32)
    hold = f"{sys.executable} -c 'import time; b = b\"x\" * (80 << 20); time.sleep({seconds})'"
    command = f"for i in 1 2 3 4; do {hold} & done; wait"
    result = await bash(host(sandbox=policy, limits={"memory_mb": 200}), workspace, command, timeoutMs=60_000)
    assert (
        "[limit: the command was killed: its processes held more than 200 MiB of memory (limits.memory_mb)]"
        in (result.text)
    )
    assert running_with(seconds) == []


async def test_a_file_cannot_pass_the_file_size_limit(workspace: Path) -> None:
    result = await bash(host(limits={"file_size_mb": 1}), workspace, "head -c 3000000 /dev/zero > big")
    assert result.text.endswith(
        "[limit: a file reached the 1 MiB file-size limit (limits.file_size_mb); the process writing it was "
        "stopped]\n[exit code: 153]"
    ), result.text
    assert (workspace / "big").stat().st_size == 1 << 20


async def test_a_spinning_process_is_stopped_at_the_cpu_limit(workspace: Path) -> None:
    result = await bash(host(limits={"cpu_seconds": 1}), workspace, "while :; do :; done", timeoutMs=60_000)
    assert result.text.endswith(
        "[limit: a process used its 1 s of CPU time (limits.cpu_seconds) and was stopped]\n"
        "[killed by signal: SIGXCPU]"
    ), result.text


async def test_limits_can_be_turned_off(workspace: Path) -> None:
    off = {"processes": None, "memory_mb": None, "file_size_mb": None, "cpu_seconds": None}
    result = await bash(host(limits=off), workspace, "head -c 3000000 /dev/zero > big; ulimit -f; ulimit -d")
    assert result.text == "unlimited\nunlimited\n"
    limited = await bash(host(), workspace, "ulimit -f; ulimit -d; ulimit -t")
    # bash counts -f and -d in KiB
    assert limited.text == f"{1024 * 1024}\n{2048 * 1024}\n600\n"


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises((ConfigError, msgspec.ValidationError), match=r"limits\.processes` must be positive"):
        host(limits={"processes": 0})


@pytest.mark.parametrize("policy", POLICIES)
async def test_nothing_the_command_started_outlives_it_setsid_or_not(workspace: Path, policy: str) -> None:
    seconds = unique_seconds(33)
    command = (
        f"setsid nohup sleep {seconds} > /dev/null 2>&1 & echo $!; "
        f"(setsid sleep {seconds} < /dev/null > /dev/null 2>&1 &); "
        f"nohup sleep {seconds} > /dev/null 2>&1 & echo started"
    )
    result = await bash(host(sandbox=policy), workspace, command, timeoutMs=60_000)
    assert result.text.endswith("started\n"), result.text
    for pid in running_with(seconds):
        await assert_dies(pid)
    assert running_with(seconds) == []
