"""Every scenario under fixtures/ replays through the real loop with no key and no network, matches its recording's
skeleton, and matches its goldens: the replayed log (system prompt and tools reduced to placeholders) and what the
user saw. `pytest --snapshot-update` refreshes the goldens from the recordings."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
from syrupy.assertion import SnapshotAssertion

from replay import Rerun, Scenario, discover, golden_jsonl, rerun

FIXTURES = Path(__file__).parents[2] / "fixtures"
SCENARIOS = discover(FIXTURES)


def replayed(scenario: Scenario) -> Rerun:
    return anyio.run(lambda: rerun(scenario))


def test_there_are_enough_scenarios_to_cover_the_runtime() -> None:
    assert len(SCENARIOS) >= 12, [s.name for s in SCENARIOS]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_scenario_replays_and_matches_its_goldens(
    scenario: Scenario, snapshot: SnapshotAssertion
) -> None:
    result = replayed(scenario)
    assert result.divergence is None, result.divergence
    logs = [golden_jsonl(data) for _, data in result.logs]
    assert logs == snapshot(name="log")
    assert result.view == snapshot(name="view")


def test_a_persona_edit_changes_the_prompt_and_no_behaviour_golden() -> None:
    scenario = next(s for s in SCENARIOS if s.name == "harness/bash-tool-turn")
    edited = Scenario(
        scenario.name,
        scenario.log,
        scenario.directory,
        msgspec.structs.replace(
            scenario.doc, overlay={"prompt": {"persona": "You are a different agent entirely, in {{cwd}}."}}
        ),
    )
    before, after = replayed(scenario), replayed(edited)
    assert before.divergence is None
    assert after.divergence is None
    assert before.logs[0][1] != after.logs[0][1]  # the header's system prompt differs ...
    assert golden_jsonl(before.logs[0][1]) == golden_jsonl(after.logs[0][1])  # ... and nothing else does
    assert before.view == after.view
