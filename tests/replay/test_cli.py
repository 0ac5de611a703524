"""`dsh replay inspect`: the readable script (golden), the JSON lines, stored sessions, overrides, and the one-line
error (exit 2) for a stream that needs an override; the help of `dsh replay` and `dsh replay run` (goldens)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from typer.testing import CliRunner

from dsh.replay import replay_app
from dsh.runtime.session import SessionStore, import_jsonl
from tests.runtime.cli.helpers import DSH, plain_env

from .logs import HARNESS
from .test_script import EXPECTED

ROOT = HARNESS.parents[1]
runner = CliRunner()


def inspect(*args: str) -> str:
    result = runner.invoke(replay_app, ["inspect", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def dsh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from dsh.runtime.cli import main; main()", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_json_lines_give_key_kind_chunk_count_and_finish(name: str) -> None:
    lines = [json.loads(line) for line in inspect(str(HARNESS / name), "--json").splitlines()]
    assert [(o["turn"], o["step"], o["attempt"], o["kind"], o["finish"]) for o in lines] == EXPECTED[name]
    for line in lines:
        assert list(line) == ["turn", "step", "attempt", "kind", "chunks", "finish"]
        assert line["chunks"] >= 1


@pytest.mark.parametrize(
    "scenario", ["compaction-recovery", "subagent-fork-in-process", "empty-response-retry"]
)
def test_the_readable_script(
    scenario: str, snapshot: SnapshotAssertion, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert inspect(f"fixtures/harness/{scenario}") == snapshot


def test_a_child_log_and_an_override(
    snapshot: SnapshotAssertion, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)
    assert inspect("fixtures/harness/subagent-fork-in-process/session.1.jsonl") == snapshot
    override = tmp_path / "o.json"
    override.write_text(
        json.dumps({"overrides": [{"op": "hang", "turn": 1, "step": 1, "readyFile": ".ready"}]})
    )
    out = inspect("fixtures/harness/cancel/session.jsonl", "--override", str(override))
    assert out.splitlines()[1].split() == [
        "(1,1,1)",
        "model",
        "2",
        "chunks",
        "hang",
        "(ready",
        "file",
        ".ready)",
        '"partial"',
        "(open)",
        "[override:",
        "hang]",
        f"({override}:",
        "overrides[0])",
    ]
    lines = inspect("fixtures/harness/cancel/session.jsonl", "--override", str(override), "--json")
    assert json.loads(lines) == {
        "turn": 1,
        "step": 1,
        "attempt": 1,
        "kind": "model",
        "chunks": 2,
        "finish": "aborted",
    }


def test_a_stored_session(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        info = import_jsonl(store, HARNESS / "empty-response-retry" / "session.jsonl")
    out = inspect(info.id, "--store", str(db))
    assert out.splitlines()[0] == f"session {info.id}: 2 calls (providers: deepseek-official)"
    assert "(seq 9)" in out.splitlines()[1]
    assert inspect(info.id[:8], "--store", str(db)) == out  # a unique prefix of the id is enough


@pytest.mark.parametrize("command", ["replay", "replay run"])
def test_the_help_a_user_reads(command: str, snapshot: SnapshotAssertion) -> None:
    shown = subprocess.run(
        [*DSH, *command.split(), "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=plain_env(),
        check=False,
    )
    assert (shown.returncode, shown.stderr) == (0, "")
    assert "Example: dsh replay demo" in shown.stdout
    assert shown.stdout == snapshot


def test_the_dsh_command_has_the_group_and_a_stream_needing_an_override_exits_2_with_one_line() -> None:
    shown = dsh("replay", "inspect", "fixtures/harness/text-turn", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["finish"] == "stop"
    failed = dsh("replay", "inspect", "fixtures/harness/cancel/session.jsonl")
    assert failed.returncode == 2
    assert failed.stdout == ""
    (line,) = failed.stderr.splitlines()
    assert line.startswith("error: fixtures/harness/cancel/session.jsonl:11: the stream of call (1,1,1)")
    assert "needs an override" in line


def test_a_missing_log_is_one_error_line() -> None:
    failed = dsh("replay", "inspect", "no/such/log.jsonl")
    assert failed.returncode == 2
    (line,) = failed.stderr.splitlines()
    assert line.startswith("error: no/such/log.jsonl: no such file or directory")


def test_replaying_a_directory_names_a_recording_it_skips_for_lack_of_scenario_yml(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "fixtures" / "authored" / "bash-exit-code", tmp_path / "scenario")
    (tmp_path / "bare").mkdir()
    shutil.copy(HARNESS / "text-turn" / "session.jsonl", tmp_path / "bare" / "session.jsonl")
    ran = dsh("replay", str(tmp_path), "--quiet")
    assert ran.returncode == 0, ran.stderr
    assert f"skipped {tmp_path / 'bare'}: a recording without scenario.yml" in " ".join(ran.stderr.split())
