"""`dsh replay DIR` over a directory of scenarios: every scenario re-run, the summary table (golden), exit 1 naming
each divergence, exit 2 when a scenario cannot be replayed, one plain line per scenario when stderr is not a
terminal and a bar when it is; a single scenario directory keeps its one-scenario report."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import anyio
import pytest
from rich.console import Console
from syrupy.assertion import SnapshotAssertion
from typer.testing import CliRunner, Result

from dsh.replay import ScriptError, discover, replay_app
from dsh.replay.frontends._batch import Report, holds_many, replay_all

from .logs import HARNESS

runner = CliRunner()
ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}


def replay(*args: str) -> Result:
    return runner.invoke(replay_app, list(args), env=ENV, catch_exceptions=False)


@pytest.fixture
def scenarios(tmp_path: Path) -> Path:
    """Three scenarios copied from fixtures/: two as recorded, and `broken`, a two-turn recording whose
    scenario.yml gives one input only, so the re-run leaves the second turn's model call unserved (a divergence)."""
    root = tmp_path / "scenarios"
    shutil.copytree(HARNESS / "text-turn", root / "harness" / "text-turn")
    shutil.copytree(HARNESS / "bash-tool-turn", root / "harness" / "bash-tool-turn")
    shutil.copytree(HARNESS / "multi-turn", root / "broken")
    (root / "broken" / "scenario.yml").write_text(
        "description: multi-turn, re-run with its first input only\ninputs: [Reply with ONE.]\n"
    )
    return root


def test_a_directory_of_scenarios_is_replayed_whole_and_a_divergence_exits_1_naming_it(
    scenarios: Path, snapshot: SnapshotAssertion
) -> None:
    result = replay(str(scenarios))
    assert result.exit_code == 1
    assert result.stdout == snapshot  # the summary table alone: no session views, no progress
    rows = {
        line.split("│")[1].strip(): line.split("│")[-2].strip() for line in result.stdout.splitlines()[4:-1]
    }
    assert rows == {"broken": "diverged", "harness/bash-tool-turn": "matches", "harness/text-turn": "matches"}
    report, problems = result.stderr.split("diverged broken: ", 1)
    assert report.splitlines() == [  # stderr is no terminal: one plain line per scenario, in name order
        "[1/3] broken: diverged (1 turn, 0 tool calls)",
        "[2/3] harness/bash-tool-turn: matches (1 turn, 1 tool call)",
        "[3/3] harness/text-turn: matches (1 turn, 0 tool calls)",
    ]
    assert problems.startswith("replay mismatch: the live run made fewer model calls than were recorded")
    assert f"{scenarios / 'broken' / 'session.jsonl'}" in problems
    assert "never served: (2,1,1)" in problems


def test_all_matching_exits_0_and_show_prints_each_session_under_its_name(scenarios: Path) -> None:
    shutil.rmtree(scenarios / "broken")
    result = replay(str(scenarios), "--show")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.index("harness/bash-tool-turn") < out.index("← TERMINAL_OK") < out.index("harness/text-turn")
    assert out.index("PONG") < out.index("2 scenarios: 2 matches")
    assert "TERMINAL_OK" not in replay(str(scenarios)).stdout  # hidden by default when replaying many


def test_a_scenario_that_cannot_be_replayed_is_reported_and_exits_2(scenarios: Path) -> None:
    bad = scenarios / "bad"
    shutil.copytree(HARNESS / "text-turn", bad)
    (bad / "scenario.yml").write_text("overlay: {no-such-plugin: {x: 1}}\n")
    result = replay(str(scenarios), "--quiet")
    assert result.exit_code == 2
    assert "│ bad " in result.stdout
    assert "4 scenarios: 2 matches, 1 diverged, 1 failed" in result.stdout
    assert "[1/4] bad: failed\n" in result.stderr
    assert f"failed bad: {bad}: overlay names plugin ids the deployment does not load: no-such-plugin;" in (
        result.stderr
    )
    assert "diverged broken: " in result.stderr


def test_on_a_terminal_a_bar_names_the_scenario_and_the_divergence_is_named_above_it(scenarios: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    found = discover(scenarios)
    with Report(console, len(found)) as report:
        outcomes = anyio.run(lambda: replay_all(found, report))
    assert [(o.name, o.result) for o in outcomes] == [
        ("broken", "diverged"),
        ("harness/bash-tool-turn", "matches"),
        ("harness/text-turn", "matches"),
    ]
    shown = out.getvalue()
    assert "3/3" in shown
    assert "broken: " in shown
    assert "[1/3]" not in shown  # the plain report is for a log, not a terminal


def test_one_scenario_directory_keeps_the_one_scenario_report() -> None:
    assert not holds_many(HARNESS / "text-turn")
    assert holds_many(HARNESS)
    result = replay(str(HARNESS / "text-turn"))
    assert result.exit_code == 0
    assert "PONG" in result.stdout  # the session view is shown for one scenario
    assert result.stderr.splitlines() == [
        f"replaying {HARNESS / 'text-turn'}",
        "matches the recording and its goldens: 1 turn, 0 tool calls",
    ]


def test_options_for_one_scenario_are_refused_for_many(scenarios: Path, tmp_path: Path) -> None:
    result = replay(str(scenarios), "--out", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 2
    assert "Invalid value for --out: applies to one scenario" in result.stderr


def test_a_directory_with_no_scenario_is_one_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ScriptError) as raised:
        replay(str(empty))
    assert str(raised.value).startswith(f"{empty}: no scenario here")
