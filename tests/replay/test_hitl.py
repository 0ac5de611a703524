"""Human in the loop in a re-run: the recording decides approvals; asking where the recording did not, or not asking
where it did, fails naming the call; hooks served from the recording (`hooks: recorded`) re-run a recording whose
hooks.json was not kept; recorded slash commands run again where they were."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from dsh.replay import Rerun, load_scenario, rerun

HARNESS = Path(__file__).resolve().parents[2] / "fixtures" / "harness"
DENY_CALL = "call_00_JliP571Bh0QQ8QExbSPk0080"
ESCALATION_CALL = "call_00_d0sAHpJ9mYOJi0z7KNy30441"


def copy(tmp_path: Path, name: str, *, hooks: str | None = None, workspace: bool = True) -> Path:
    """A copy of a shared scenario, its deployment named absolutely; `hooks` replaces its scenario's mode."""
    target = tmp_path / name
    shutil.copytree(HARNESS / name, target, ignore=shutil.ignore_patterns("__snapshots__"))
    if not workspace:
        shutil.rmtree(target / "workspace", ignore_errors=True)
    doc = (target / "scenario.yml").read_text()
    doc = doc.replace("../human-in-the-loop.yml", str(HARNESS / "human-in-the-loop.yml"))
    if hooks is not None:
        doc = doc.replace("hooks: recorded\n", "") + f"hooks: {hooks}\n"
    (target / "scenario.yml").write_text(doc)
    return target


def run(path: Path) -> Rerun:
    return anyio.run(lambda: rerun(load_scenario(path)))


def test_a_re_run_that_runs_what_the_recording_rejected_fails_naming_the_call(tmp_path: Path) -> None:
    # the recording's escalation, rejected; the re-run's bash already has full access, so it asks nobody and runs
    scenario = copy(tmp_path, "escalation-approved")
    log = scenario / "session.jsonl"
    log.write_text(log.read_text().replace('"outcome":"allowed-once"', '"outcome":"rejected"'))
    doc = (
        (scenario / "scenario.yml")
        .read_text()
        .replace("sandbox: workspace-write", "sandbox: danger-full-access")
    )
    (scenario / "scenario.yml").write_text(doc)
    result = run(scenario)
    assert result.divergence is not None
    assert f"- recorded:       approval asked for bash call {ESCALATION_CALL}" in result.divergence
    assert result.tool_calls[0].result == "escalated\n"  # it ran: what the recording rejected


def test_a_re_run_that_asks_where_the_recording_did_not_fails_naming_the_call(tmp_path: Path) -> None:
    scenario = copy(tmp_path, "hook-cc-pretool-deny")
    ask = (HARNESS / "hook-cc-pretool-ask" / "workspace" / "hooks.json").read_text()
    (scenario / "workspace" / "hooks.json").write_text(ask)
    result = run(scenario)
    assert result.divergence is not None
    assert f"the re-run asked for approval of bash call {DENY_CALL}" in result.divergence
    assert "asked no approval for that call" in result.divergence


def test_the_recorded_outcome_is_applied_and_nobody_is_asked(tmp_path: Path) -> None:
    result = run(copy(tmp_path, "hook-cc-pretool-ask"))
    assert result.divergence is None
    assert [c.result for c in result.tool_calls] == ['Error: the user rejected tool "bash"']


@pytest.mark.parametrize(
    "name",
    [
        "hook-cc-pretool-deny",
        "hook-cc-pretool-ask",
        "hook-cc-posttool-context",
        "hook-codex-pretool-block",
        "hook-codex-stop-continue",
    ],
)
def test_hooks_served_from_the_recording_re_run_it_without_its_hooks_file(tmp_path: Path, name: str) -> None:
    live = run(copy(tmp_path / "live", name))
    recorded = run(copy(tmp_path / "recorded", name, hooks="recorded", workspace=False))
    assert live.divergence is None
    assert recorded.divergence is None
    assert recorded.replayed == live.replayed
    assert [c.result for c in recorded.tool_calls] == [c.result for c in live.tool_calls]
    assert recorded.text == live.text


def test_a_recorded_slash_command_runs_again_before_the_turn_it_preceded(tmp_path: Path) -> None:
    result = run(copy(tmp_path, "approval-composer"))
    assert result.divergence is None
    kinds = [e.type for e in result.events[:5]]
    assert kinds == ["command/run", "permission/preset", "sandbox/mode", "approval/policy", "command/done"]
