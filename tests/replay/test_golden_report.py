"""`dsh replay PATH` compares the scenario's goldens too (so the command a pytest failure prints reproduces it), and
a golden difference names the JSON path of the first difference with both values, then shows the whole lines."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from dsh.replay.frontends._goldens import first_difference, json_difference
from tests.runtime.cli.helpers import DSH, plain_env

ROOT = Path(__file__).resolve().parents[2]
FS_TOOLS = ROOT / "fixtures" / "authored" / "fs-tools"


def replay(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*DSH, "replay", str(path), "-q"],
        capture_output=True,
        text=True,
        env=plain_env(),
        timeout=120,
        check=False,
    )


def test_the_first_json_difference_is_named_by_its_path_with_both_values() -> None:
    old = {"type": "tool/result", "data": {"content": [{"text": "a"}, {"text": "b"}], "isError": False}}
    new = {"type": "tool/result", "data": {"content": [{"text": "a"}, {"text": "c"}], "isError": True}}
    assert json_difference(old, new) == ("$.data.content[1].text", "b", "c")
    assert json_difference(old, old) is None
    longer = json_difference([1], [1, 2])
    assert longer is not None
    assert (longer[0], longer[2]) == ("$[1]", 2)
    assert json_difference({"a": 1}, {"a": True}) == ("$.a", 1, True)  # equal in Python, not in JSON


def test_a_golden_line_difference_shows_the_path_the_values_and_the_whole_lines() -> None:
    golden = '  x\n  {"type":"tool/result","seq":9,"data":{"turn":1,"step":2,"callId":"c1","text":"hi"}}\n'
    replayed = '  x\n  {"type":"tool/result","seq":9,"data":{"turn":1,"step":2,"callId":"c1","text":"ho"}}\n'
    assert first_difference(golden, replayed).splitlines() == [
        "  first difference at golden line 2 (tool/result, seq 9, turn 1 step 2, call c1):",
        '  at $.data.text: golden "hi", replayed "ho"',
        '  - golden (the recording): {"type":"tool/result","seq":9,"data":{"turn":1,"step":2,"callId":"c1","text":"hi"}}',
        '  + replayed:                {"type":"tool/result","seq":9,"data":{"turn":1,"step":2,"callId":"c1","text":"ho"}}',
    ]


def test_dsh_replay_says_the_goldens_match_too() -> None:
    ran = replay(FS_TOOLS)
    assert ran.returncode == 0, ran.stderr
    assert "matches the recording and its goldens: 1 turn, 6 tool calls" in ran.stderr


def test_dsh_replay_fails_when_a_golden_differs_though_the_skeleton_matches(tmp_path: Path) -> None:
    """A tool's result changed (here: the golden edited instead): the skeleton still matches, the goldens do not,
    and `dsh replay` says so as pytest does, instead of "matches the recording"."""
    scenario = tmp_path / "fs-tools"
    shutil.copytree(FS_TOOLS, scenario)
    golden = scenario / "__snapshots__" / "scenario.ambr"
    text = golden.read_text()
    golden.write_text(text.replace('"data":{"turn":1}}', '"data":{"turn":7}}', 1))
    ran = replay(scenario)
    assert ran.returncode == 1, ran.stderr
    said = ran.stderr.splitlines()
    assert said[1:5] == [
        "differs from its goldens (the recording's skeleton matches)",
        "the replayed log differs from its golden __snapshots__/scenario.ambr [replay[log]]",
        "  first difference at golden line 5 (turn/start, seq 1, turn 7):",
        "  at $.data.turn: golden 7, replayed 1",
    ]
