"""`dsh record`: a recording that is no recording of working turns is an error (exit 1, the logs kept for a look):
a turn that ended in error (so its goldens can never go green), or a `--script` whose replies do not match the model
calls the run made (too few, too many)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from tests.runtime.cli.helpers import DSH, deployment, plain_env

ROOT = Path(__file__).resolve().parents[2]
FS_TOOLS = ROOT / "fixtures" / "authored" / "fs-tools"


def record(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*DSH, "record", *args], capture_output=True, text=True, env=plain_env(), timeout=120, check=False
    )


def _fs_tools_with(tmp_path: Path, keep: int, extra: int = 0) -> Path:
    scenario = tmp_path / "fs-tools"
    shutil.copytree(FS_TOOLS, scenario, ignore=shutil.ignore_patterns("__snapshots__", "session*.jsonl"))
    replies = yaml.safe_load((scenario / "replies.yml").read_text())["replies"]
    replies = replies[:keep] + [{"text": f"one more ({n})"} for n in range(extra)]
    (scenario / "replies.yml").write_text(yaml.safe_dump({"replies": replies}))
    return scenario


def test_a_turn_that_ended_in_error_exits_1_naming_it_and_keeps_the_log(tmp_path: Path) -> None:
    """A route nothing answers (as with a key that does not work): the turn is shown as `dsh run` shows it, the log
    is written, and the command says what failed instead of "recorded 1 session log"."""
    scenario = tmp_path / "broken"
    scenario.mkdir()
    (scenario / "deployment.yml").write_text(deployment("http://127.0.0.1:9/v1"))
    (scenario / "scenario.yml").write_text(yaml.safe_dump({"deployment": "deployment.yml", "inputs": ["hi"]}))
    ran = record(str(scenario))
    assert ran.returncode == 1, ran.stderr
    assert ran.stderr.startswith("turn 1 failed: ")  # as dsh run prints it: one line on stderr
    said = " ".join(ran.stderr.splitlines()[-1].split())
    assert said.startswith("error: the recording failed: turn 1 of session.jsonl failed: ")
    assert f"written into {scenario} for a look; it is no scenario to keep" in said
    assert '"type":"turn/end"' in (scenario / "session.jsonl").read_text()
    assert "recorded 1 session log" not in ran.stdout


def test_too_few_replies_is_an_error_naming_the_counts(tmp_path: Path) -> None:
    scenario = _fs_tools_with(tmp_path, keep=2)
    ran = record(str(scenario), "--script", str(scenario / "replies.yml"))
    assert ran.returncode == 1, ran.stderr
    said = " ".join(ran.stderr.split())
    assert "holds 2 replies and the run asked for 3 model calls: add the 1 missing" in said
    assert "the scripted model has 2 replies, 2 served, and none left" in said


def test_too_many_replies_is_an_error_naming_the_counts(tmp_path: Path) -> None:
    scenario = _fs_tools_with(tmp_path, keep=6, extra=2)
    ran = record(str(scenario), "--script", str(scenario / "replies.yml"))
    assert ran.returncode == 1, ran.stderr
    said = " ".join(ran.stderr.split())
    assert "holds 8 replies and the run asked for 6 model calls: reply 7, 8 were never served" in said


def test_matching_replies_record_and_say_so(tmp_path: Path) -> None:
    scenario = _fs_tools_with(tmp_path, keep=6)
    ran = record(str(scenario), "--script", str(scenario / "replies.yml"))
    assert ran.returncode == 0, ran.stderr
    assert f"recorded 1 session log into {scenario}" in ran.stdout
    assert "→ edit" in ran.stdout  # the turn is shown as it runs
