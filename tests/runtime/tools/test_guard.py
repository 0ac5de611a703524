"""The supervisor every tool command runs under: it exits as the command exits, and when its parent dies (SIGKILL,
nothing of the parent runs) it kills everything the command started, including a child that left the process group
with `setsid`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsh.runtime.tools.guard import SUPPORTED, Limits, guarded

pytestmark = pytest.mark.skipif(not SUPPORTED, reason="the supervisor is Linux-only")


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until(condition: object, seconds: float) -> bool:
    assert callable(condition)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


@pytest.mark.parametrize(
    ("command", "returncode"),
    [("exit 0", 0), ("exit 7", 7), ("kill -TERM $$", -15), ("kill -KILL $$", -9), ("kill 0", -15)],
)
def test_the_supervisor_exits_as_the_command_does(command: str, returncode: int) -> None:
    done = subprocess.run(guarded(["bash", "-c", command]), start_new_session=True, check=False, timeout=10)
    assert done.returncode == returncode


def test_output_and_sigpipe_behave_as_without_it() -> None:
    # `yes` dies of SIGPIPE when `head` exits, as in any shell: the supervisor does not leak Python's SIG_IGN.
    done = subprocess.run(
        guarded(["bash", "-c", "yes | head -2; echo status=${PIPESTATUS[0]}"]),
        start_new_session=True,
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    )
    assert done.stdout == "y\ny\nstatus=141\n"


def test_a_missing_program_is_exit_127() -> None:
    done = subprocess.run(
        guarded(["no-such-program-dsh"]), start_new_session=True, capture_output=True, check=False, timeout=10
    )
    assert (done.returncode, b"no-such-program-dsh" in done.stderr) == (127, True)


def test_when_the_parent_is_killed_every_descendant_dies(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = f"setsid sleep 30 & echo $! >> {pids}; sleep 30 & echo $! >> {pids}; echo $$ >> {pids}; wait"
    parent_code = (
        "import subprocess, sys, time; sys.path.insert(0, sys.argv[1]); from dsh.runtime.tools.guard import guarded; "
        "subprocess.Popen(guarded(['bash', '-c', sys.argv[2]]), start_new_session=True); time.sleep(60)"
    )
    root = str(Path(__file__).parents[3])
    parent = subprocess.Popen([sys.executable, "-c", parent_code, root, command])
    try:
        assert wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 3, 10)
        started = [int(pid) for pid in pids.read_text().split()]
        assert all(alive(pid) for pid in started)
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
    assert wait_until(lambda: not any(alive(pid) for pid in started), 2), [p for p in started if alive(p)]


@pytest.mark.parametrize("report", [False, True], ids=["shared-group", "own-group"])
def test_nothing_the_command_left_running_outlives_it(report: bool) -> None:
    # `setsid nohup` leaves the group and ignores SIGHUP; the supervisor still finds it (a subreaper adopts it when
    # the shell exits) and kills it after the grace period, before it exits itself.
    command = "setsid nohup sleep 300 > /dev/null 2>&1 & echo $!; sleep 300 > /dev/null 2>&1 & echo $!"
    read_end, write_end = os.pipe()
    try:
        argv = guarded(["bash", "-c", command], report_fd=write_end if report else None)
        done = subprocess.run(
            argv,
            start_new_session=True,
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
            pass_fds=(write_end,) if report else (),
        )
    finally:
        os.close(read_end)
        os.close(write_end)
    started = [int(pid) for pid in done.stdout.split()]
    assert (done.returncode, len(started)) == (0, 2)
    assert not any(alive(pid) for pid in started), [pid for pid in started if alive(pid)]


def test_a_command_past_the_process_limit_is_killed_and_reported() -> None:
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run(
            guarded(
                ["bash", "-c", "for i in $(seq 60); do sleep 34.5 & done; wait"],
                Limits(processes=20),
                write_end,
            ),
            start_new_session=True,
            check=False,
            timeout=30,
            pass_fds=(write_end,),
        )
        os.set_blocking(read_end, False)
        report = os.read(read_end, 1000).decode().split()
    finally:
        os.close(read_end)
        os.close(write_end)
    assert done.returncode == -signal.SIGKILL
    assert (report[0], report[2:]) == ("group", ["processes"])
