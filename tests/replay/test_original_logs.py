"""Every log of the original in fixtures/harness/ derives its replay script (unfinished streams only where an override
covers them or the log is a repaired one), and every one that records a user input is a scenario that re-runs
(its scenario.yml beside it; `subagent-report` re-runs with continuable subagents)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.replay import derive_entries, derive_script, discover, load_overrides, read_log, recorded_turns

from .logs import HARNESS

LOGS = sorted(p for p in HARNESS.glob("*/*.jsonl"))
SCENARIOS = {s.directory for s in discover(HARNESS) if s.directory is not None}


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_log_of_the_original_derives_its_script(path: Path) -> None:
    log = read_log(path)
    entries, providers = derive_entries(log)
    unfinished = [entry for entry in entries if not entry.finished]
    override = path.parent / "override.json"
    if override.exists() and path.name == "session.jsonl":
        script = derive_script(log, load_overrides(override))
        assert all(entry.finished for entry in script.entries)
    elif not unfinished:
        script = derive_script(log)
        assert len(script.entries) == len(entries)
    else:  # a repaired log: its cut stream is the one crash repair closed
        assert path.name == "session.expected.jsonl", [e.describe() for e in unfinished]
    if entries:
        assert providers


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_log_with_a_user_input_is_a_scenario_that_re_runs(path: Path) -> None:
    inputs = [m for turn in recorded_turns(read_log(path)) for m in turn.inputs]
    if path.name != "session.jsonl":
        pytest.skip("a child log or a repair golden: its primary log is the scenario")
    if not inputs:
        pytest.skip("no user input recorded: nothing to re-run it with")
    assert path.parent in SCENARIOS, f"{path.parent.name} records user input but is not a scenario"
