"""`dsh sessions ...`: import, list, show, export and fork, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from typer.testing import CliRunner

from runtime.cli import app
from runtime.cli.sessions_cmd import default_store_path
from runtime.session import CountingIds, FixedClock, SessionStore, import_jsonl

ROOT = Path(__file__).resolve().parents[3]
HARNESS = ROOT / "fixtures" / "harness"
runner = CliRunner()


def run(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_default_store_honours_xdg_data_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_store_path() == tmp_path / "dsh" / "sessions.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_store_path() == Path.home() / ".local" / "share" / "dsh" / "sessions.db"


@pytest.mark.parametrize("path", sorted(HARNESS.glob("*/*.jsonl")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_import_then_show_works_on_every_corpus_file(tmp_path: Path, path: Path) -> None:
    store = str(tmp_path / "s.db")
    new_id = json.loads(run("sessions", "import", str(path), "--store", store, "--json"))["id"]
    shown = json.loads(run("sessions", "show", new_id, "--store", store, "--json"))
    assert shown["session"]["id"] == new_id
    text = run("sessions", "show", new_id, "--store", store)
    assert f"session {new_id}" in text
    for message in shown["messages"]:
        assert f"seq {message['seq']}" in text


def test_list_export_fork_round_trip(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    source = HARNESS / "multi-turn" / "session.jsonl"
    parent = json.loads(run("sessions", "import", str(source), "--store", store, "--json"))["id"]
    listed = json.loads(run("sessions", "list", "--store", store, "--json"))
    assert [(s["id"], s["events"]) for s in listed] == [
        (parent, 37 + 34)
    ]  # 37 lines, two packed rows of 18 + 18
    out = tmp_path / "out.jsonl"
    run("sessions", "export", parent, "-o", str(out), "--store", store)
    assert [json.loads(line) for line in out.read_text().splitlines()][1:] == [
        json.loads(line) for line in source.read_text().splitlines()
    ][1:]
    events = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    first_end = next(e["seq"] for e in events if e["type"] == "turn/end")
    child = json.loads(run("sessions", "fork", parent, "--at", str(first_end), "--store", store, "--json"))
    assert child["seedLength"] == first_end + 1
    exported = run("sessions", "export", child["id"], "--store", store, "--no-pack")
    lines = [json.loads(line) for line in exported.splitlines()]
    assert lines[0]["parentSession"] == parent
    assert [e["seq"] for e in lines[1:]] == list(range(first_end + 1))
    listed = json.loads(run("sessions", "list", "--store", store, "--json"))
    assert [(s["id"], s["parent_id"], s["seed_length"], s["events"]) for s in listed][1] == (
        child["id"],
        parent,
        first_end + 1,
        first_end + 1,
    )
    assert "2 sessions" in run("sessions", "list", "--store", store)


def test_show_renders_turns_steps_tools_and_messages(tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db, clock=FixedClock(0), ids=CountingIds("golden")) as store:
        session = import_jsonl(store, HARNESS / "bash-tool-turn" / "session.jsonl").id
    assert run("sessions", "show", session, "--store", str(db)) == snapshot


def test_errors_print_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"session","version":3,"id":"x","createdAt":1,"delegationDepth":0}\n')
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    for args, message in [
        (["sessions", "import", str(bad)], "format version 3 is newer than the version dsh reads (0)"),
        (["sessions", "show", "missing"], 'no session "missing"'),
        (["sessions", "fork", "missing", "--at", "3"], 'no session "missing"'),
    ]:
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "from runtime.cli import main; main()",
                *args,
                "--store",
                str(tmp_path / "s.db"),
            ],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        assert result.returncode == 2, result.stderr
        assert message in result.stderr
