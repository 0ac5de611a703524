"""`dsh sessions ...`: import, list, show, export and fork, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from typer.testing import CliRunner

from dsh.runtime.cli.app import app
from dsh.runtime.host import default_store_path
from dsh.runtime.session import CountingIds, FixedClock, SessionStore, SpawnedBy, import_jsonl

ROOT = Path(__file__).resolve().parents[3]
HARNESS = ROOT / "fixtures" / "harness"
runner = CliRunner()


def run(*args: str) -> str:
    # output to a file with no COLUMNS, as a script piping dsh gets it (whatever width the test run's shell has)
    result = runner.invoke(app, list(args), catch_exceptions=False, env={"COLUMNS": None})
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
                "from dsh.runtime.cli import main; main()",
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


def _family(db: Path) -> tuple[str, str, str, str]:
    """A recorded parent with a fork and a spawned child linked to its bash call, and a grandchild."""
    # a minute apart; the children are stamped from their parent's clock, after its last recorded event, and
    # named after it
    with SessionStore(db, clock=FixedClock(1_790_000_000_000, 60_000), ids=CountingIds("tree")) as store:
        parent = import_jsonl(store, HARNESS / "bash-tool-turn" / "session.jsonl").id
        events = list(store.events(parent))
        call = next(e for e in events if e.type == "tool/call")
        call_id = json.loads(call.data)["callId"]
        end = next(e.seq for e in events if e.type == "turn/end")
        by = SpawnedBy(turn=1, step=1, call_id=call_id)
        fork = store.fork(parent, at=end, delegation_depth=1, spawned_by=by).id
        spawned = store.create(parent_id=parent, delegation_depth=1, spawned_by=by).id
        grandchild = store.create(parent_id=spawned, delegation_depth=2).id
        store.create(cwd="/elsewhere")
    return parent, fork, spawned, grandchild


def test_show_draws_forks_and_subagents_as_a_tree(tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    db = tmp_path / "s.db"
    parent, fork, spawned, grandchild = _family(db)
    text = run("sessions", "show", parent, "--store", str(db))
    header = text[: text.index("  · agent/inbox/spliced (seq 0)")]
    assert header == snapshot
    assert f"    ↳ subagent session {fork}\n    ↳ subagent session {spawned}\n" in text
    shown = json.loads(run("sessions", "show", parent, "--store", str(db), "--json"))
    tree = [(c["id"], [g["id"] for g in c["children"]]) for c in shown["children"]]
    assert tree == [(fork, []), (spawned, [grandchild])]
    assert json.loads(run("sessions", "show", grandchild, "--store", str(db), "--json"))["children"] == []


def test_list_puts_children_under_their_parent(tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    db = tmp_path / "s.db"
    _family(db)
    assert run("sessions", "list", "--store", str(db)) == snapshot
    flat = json.loads(run("sessions", "list", "--store", str(db), "--json"))
    assert [s["id"] for s in flat] == ["tree-1", "tree-1.1", "tree-1.2", "tree-1.2.1", "tree-2"]


def test_list_and_show_on_a_stdout_that_cannot_encode_the_tree(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    parent, *_ = _family(db)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "COLUMNS": "200", "PYTHONIOENCODING": "ascii"}

    def dsh(*args: str) -> str:
        argv = [sys.executable, "-c", "from dsh.runtime.cli import main; main()", *args, "--store", str(db)]
        result = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
        assert result.returncode == 0, result.stderr
        return result.stdout

    listed = dsh("sessions", "list")
    assert "| `- tree-1.1 " in listed  # rich's ASCII box, and an ASCII branch for each child
    assert "|   `- tree-1.2.1 " in listed
    shown = dsh("sessions", "show", parent)
    assert "  ? agent/inbox/spliced (seq 0)" in shown  # a character ASCII lacks is shown as "?"
    assert "? subagent session tree-1.1" in shown


def test_an_imported_recorded_pair_shows_as_parent_and_child(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    fixture = HARNESS / "subagent-fork-in-process"
    parent = json.loads(
        run("sessions", "import", str(fixture / "session.jsonl"), "--store", store, "--json")
    )["id"]
    child = json.loads(
        run("sessions", "import", str(fixture / "session.1.jsonl"), "--store", store, "--json")
    )["id"]
    shown = json.loads(run("sessions", "show", parent, "--store", store, "--json"))
    assert [(c["id"], c["seed_length"]) for c in shown["children"]] == [(child, 42)]


def test_fork_list_and_show_number_a_fork_alike(tmp_path: Path) -> None:
    """`fork --at 36` said 36, while list said `fork @37` and show `at 37` (the seed length): all three now name
    the last inherited seq."""
    store = str(tmp_path / "s.db")
    with SessionStore(store) as opened:
        parent = import_jsonl(opened, HARNESS / "multi-turn" / "session.jsonl").id
    at = 36  # the first turn's turn/end
    forked = run("sessions", "fork", parent, "--at", str(at), "--store", store)
    child = forked.split()[-1]
    assert forked.strip() == f"forked {parent} at seq {at} as session {child}"
    assert f"{parent} (fork @{at})" in " ".join(run("sessions", "list", "--store", store).split())
    assert f"forked from {parent} at seq {at}" in run("sessions", "show", child, "--store", store)


def test_a_long_message_is_shown_whole_in_bounded_pieces() -> None:
    """`sessions show` hands rich a long text in pieces of about `_PIECE` characters (rich's rendering of one huge
    text is quadratic: benchmarks/bench_show.py measures the linear whole), and loses nothing."""
    import io

    from rich.console import Console

    from dsh.runtime.cli.sessions_cmd import _PIECE, _pieces, _render
    from dsh.runtime.session import StoredEvent

    text = "".join(f"line {i} " + "x" * (i % 50) + "\n" for i in range(20_000)) + "w " * 40_000 + "z" * 40_000
    pieces = list(_pieces(text))
    assert max(len(piece) for piece in pieces) <= _PIECE + 100
    assert "\n".join(pieces).replace("\n  ", "\n").removeprefix("  ").replace("\n", "") == text.replace(
        "\n", ""
    )
    assert list(_pieces("short\ntext")) == ["  short\n  text"]
    data = json.dumps(
        {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "role": "user"}
    )
    out = io.StringIO()
    _render(
        Console(file=out, width=100),
        StoredEvent(type="user/message", seq=3, time=0, data=data, surface_op="append"),
        {},
    )
    shown = out.getvalue()
    assert shown.startswith("user  seq 3\n  line 0 \n  line 1 x\n")
    assert "line 19999 " in shown
    assert shown.count("z") == 40_000
