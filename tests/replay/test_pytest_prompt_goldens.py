"""The pytest plugin's opt-in prompt golden, its wire replay option and its stale-recording report, used as a project
uses them: the shop project of test_pytest_plugin.py (recorded with an authored model, goldens written, then run
with no key and no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.plugins.llm_openai import OpenAICompatibleAdapter
from tests.replay.test_pytest_plugin import _not_a_worker, goldened, project, recorded, run

pytest_plugins = ["pytester"]
__all__ = ["_not_a_worker", "goldened", "project", "recorded"]  # the fixtures, used by name


def _ini(project: Path, line: str) -> None:
    config = project / "pytest.ini"
    config.write_text(config.read_text() + line + "\n")


def test_prompt_goldens_are_written_on_update_and_a_persona_edit_fails_only_them(
    goldened: Path, pytester: pytest.Pytester
) -> None:
    _ini(goldened, "dsh_prompt_goldens = true")
    updated = run(pytester, "--snapshot-update")
    updated.assert_outcomes(passed=2)
    updated.stdout.fnmatch_lines(["*2 snapshots generated*"])
    golden = (goldened / "scenarios" / "price" / "__snapshots__" / "scenario.ambr").read_text()
    assert "# name: replay[prompt]" in golden
    assert "You are a shop assistant working in {{cwd}}." in golden
    assert '"name": "price"' in golden
    assert "## sent at turn 1 step 1" in golden
    assert "## sent at turn 1 step 2" not in golden  # step 2 sent the same prompt: left out
    run(pytester).assert_outcomes(passed=2)

    deployment = goldened / "agent.yml"
    deployment.write_text(deployment.read_text().replace("a shop assistant", "a terse shop clerk"))
    edited = run(pytester)
    edited.assert_outcomes(failed=2)
    edited.stdout.fnmatch_lines(
        ["*the prompt (system prompts and tool schemas sent) differs from its golden*"]
    )
    assert "replayed log differs" not in edited.stdout.str()
    assert "view (what the user saw) differs" not in edited.stdout.str()


def test_a_scenario_opts_in_alone(goldened: Path, pytester: pytest.Pytester) -> None:
    spec = goldened / "scenarios" / "price" / "scenario.yml"
    spec.write_text(spec.read_text() + "prompt_golden: true\n")
    run(pytester, "--snapshot-update").stdout.fnmatch_lines(["*1 snapshot generated*"])
    assert "replay[prompt]" in spec.with_name("__snapshots__").joinpath("scenario.ambr").read_text()
    assert (
        "replay[prompt]"
        not in (goldened / "scenarios" / "weather" / "__snapshots__" / "scenario.ambr").read_text()
    )


def test_the_wire_ini_option_replays_through_the_real_adapter(
    goldened: Path, pytester: pytest.Pytester
) -> None:
    real = OpenAICompatibleAdapter.stream
    _ini(goldened, "dsh_wire_replay = true")
    run(pytester).assert_outcomes(passed=2)
    # a stub adapter that raises passes chunk replay and fails wire replay
    (goldened / "conftest.py").write_text(
        "import pytest\n\n"
        "import dsh.plugins.llm_openai._adapter as adapter\n\n\n"
        "async def _stub(self, request):\n"
        "    raise RuntimeError('stub')\n"
        "    yield\n\n\n"
        "@pytest.fixture(autouse=True)\n"
        "def _stub_adapter(monkeypatch):\n"
        "    monkeypatch.setattr(adapter.OpenAICompatibleAdapter, 'stream', _stub)\n"
    )
    failed = run(pytester)
    failed.assert_outcomes(failed=2)
    failed.stdout.fnmatch_lines(["*wire call (1,1,1)*the adapter sent no request*"])
    assert OpenAICompatibleAdapter.stream is real  # the stub did not outlive the inner run


def test_a_tool_added_after_recording_is_reported_once(goldened: Path, pytester: pytest.Pytester) -> None:
    module = goldened / "shopagent.py"
    module.write_text(
        module.read_text().replace(
            '    tools.register(Tool("weather"',
            '    tools.register(Tool("stock", "How many are left.", item, price))\n    tools.register(Tool("weather"',
        )
    )
    result = run(pytester)
    result.assert_outcomes(passed=2)  # behaviour goldens reduce the tools to {{tools}}: they still pass
    lines = [line for line in result.stdout.lines if "recorded before tool" in line]
    assert lines == [
        "recorded before tool stock existed: re-record to cover it (scenarios/price, scenarios/weather)"
    ]
    # under xdist, the workers' findings reach the controller's report
    spread = run(pytester, "-n", "2")
    spread.assert_outcomes(passed=2)
    assert len([line for line in spread.stdout.lines if "recorded before tool stock existed" in line]) == 1


def test_a_tool_removed_after_recording_fails_naming_it(goldened: Path, pytester: pytest.Pytester) -> None:
    module = goldened / "shopagent.py"
    module.write_text(module.read_text().replace('    tools.register(Tool("price"', '    (Tool("price"'))
    result = run(pytester, "scenarios/price")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*the recording calls price (called at (1,1,1)*which the deployment no longer offers*"]
    )
