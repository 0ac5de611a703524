"""Children die with the agent: a `dsh run` whose bash command is `sleep 2; touch marker` is killed mid-command,
by SIGKILL (nothing in dsh runs: the supervisor's parent-death signal does the work) and by Ctrl-C (SIGINT); every
process below dsh is gone within a second and the marker never appears. The same holds for a command run as a
background job while the agent waits on it with job_output."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.plugins.llm_openai.loopback import Reply, loopback
from tests.runtime.cli.helpers import answer, bash_call, tool_call

from .agent_run import deployment, environment, run_command
from .test_bash import alive

pytestmark = pytest.mark.anyio


def descendants(root: int) -> dict[int, str]:
    """Every live process below `root`, with its command name."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append((int(entry.name), name))
    found: dict[int, str] = {}
    pending = [root]
    while pending:
        for pid, name in children.get(pending.pop(), []):
            found[pid] = name
            pending.append(pid)
    return found


async def eventually(condition: Callable[[], bool], *, seconds: float) -> None:
    """Wait until `condition()` holds, polling; fail after `seconds`."""
    for _ in range(int(seconds / 0.02) + 1):
        if condition():
            return
        await anyio.sleep(0.02)
    raise AssertionError(f"not within {seconds}s")


async def kill_mid_command(tmp_path: Path, signum: int, bash: dict[str, Any], *replies: Reply) -> None:
    """Run `dsh run` against `replies` (its bash command: `(sleep 2; touch marker.bg) & sleep 2; touch marker`), send
    it `signum` once both sleeps run, and check that every process below it is gone at once and no marker appears."""
    marker = tmp_path / "marker"
    async with loopback(*replies) as server:
        config = tmp_path / "deployment.yml"
        config.write_text(deployment(server.base_url, key_env="DSH_TEST_KEY", bash=bash))
        env = environment(DSH_TEST_KEY="k")
        async with await anyio.open_process(run_command(config, tmp_path / "s.db", tmp_path), env=env) as dsh:
            await eventually(lambda: list(descendants(dsh.pid).values()).count("sleep") == 2, seconds=20)
            started = anyio.current_time()
            children = descendants(dsh.pid)
            dsh.send_signal(signal.Signals(signum))
            with anyio.fail_after(10):
                await dsh.wait()
    await eventually(lambda: not any(alive(pid) for pid in children), seconds=1)
    await anyio.sleep(max(0.0, started + 2.5 - anyio.current_time()))
    assert not await anyio.Path(marker).exists()
    assert not await anyio.Path(f"{marker}.bg").exists()
    assert not any(alive(pid) for pid in children), children


def command(tmp_path: Path) -> str:
    # a background child too: it must die with the rest, not finish on its own
    marker = tmp_path / "marker"
    return f"(sleep 2; touch {marker}.bg) & sleep 2; touch {marker}"


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
@pytest.mark.parametrize("sandbox", ["danger-full-access", "workspace-write"])
async def test_killing_dsh_kills_its_running_command(tmp_path: Path, signum: int, sandbox: str) -> None:
    await kill_mid_command(
        tmp_path, signum, {"sandbox": sandbox}, bash_call(command(tmp_path)), answer("done")
    )


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
async def test_killing_dsh_kills_its_background_job(tmp_path: Path, signum: int) -> None:
    await kill_mid_command(
        tmp_path,
        signum,
        {"run_in_background": True},
        tool_call("bash", {"command": command(tmp_path), "description": "run it", "run_in_background": True}),
        tool_call("job_output", {"job_id": "job-1", "wait": True, "timeout_ms": 60_000}, call_id="call_2"),
        answer("done"),
    )
