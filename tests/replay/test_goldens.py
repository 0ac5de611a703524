"""Behaviour goldens do not depend on the prompt: a persona edit changes the replayed request header's system
prompt and nothing a golden holds (fixtures/ themselves are collected and compared by dsh's pytest plugin)."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec

from dsh.replay import Rerun, Scenario, golden_jsonl, load_scenario, rerun

FIXTURES = Path(__file__).parents[2] / "fixtures"


def replayed(scenario: Scenario) -> Rerun:
    return anyio.run(lambda: rerun(scenario))


def test_a_persona_edit_changes_the_prompt_and_no_behaviour_golden() -> None:
    scenario = load_scenario(FIXTURES / "harness" / "bash-tool-turn")
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
