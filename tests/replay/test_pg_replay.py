"""A session recorded into PostgreSQL by `dsh run --replay` replays from it: `dsh replay run ID --store URL` matches,
and its skeleton is the recording's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dsh.replay.recordings._source import read_log
from dsh.replay.script._skeleton import skeleton
from dsh.runtime.session import open_store

ROOT = Path(__file__).resolve().parents[2]
DSH = [sys.executable, "-c", "from dsh.runtime.cli import main; main()"]
SCENARIO = ROOT / "fixtures" / "harness" / "bash-tool-turn"


def _dsh(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEEPSEEK_API_KEY": "", "NO_COLOR": "1"}
    return subprocess.run([*DSH, *args], capture_output=True, text=True, cwd=ROOT, env=env, check=False)


def test_a_session_recorded_into_postgresql_replays_from_it(tmp_path: Path, pg_url: str) -> None:
    recorded = _dsh(
        "run", "anything: the recording answers", "--config", str(ROOT / "examples" / "coding-agent.yml"),
        "--replay", str(SCENARIO), "--store", pg_url, "--cwd", str(tmp_path),
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    (listed,) = json.loads(_dsh("sessions", "list", "--store", pg_url, "--json").stdout)
    with open_store(pg_url) as store:
        ours = skeleton(store.events(listed["id"]), cwd=str(tmp_path))
    theirs = skeleton(event for event, _ in read_log(SCENARIO / "session.jsonl").events())
    assert ours == theirs
    assert any("bash" in line for line in ours)
    replayed = _dsh("replay", "run", listed["id"], "--store", pg_url, "--quiet")
    assert replayed.returncode == 0, replayed.stderr
    assert "matches the recording" in replayed.stderr
