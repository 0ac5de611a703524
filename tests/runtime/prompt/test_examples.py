"""Prompt goldens of the example deployments, and the `dsh prompt` command that shows them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import pytest
from syrupy.assertion import SnapshotAssertion
from typer.testing import CliRunner

from runtime.cli import app, main
from runtime.cli.prompt_cmd import assemble_deployment
from runtime.kernel import ConfigError, ServiceNotFoundError, load_deployment
from runtime.prompt import PromptRenderError, render_prompt

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CODING = EXAMPLES / "coding-agent.yml"
ACP = EXAMPLES / "acp-agent.yml"
# The facts the agent loop would state for these deployments: the `model:` key, and for ACP the client's cwd.
CASES = {"coding-agent.yml": {}, "acp-agent.yml": {"cwd": "/workspace/project"}}

# The tools both examples load (bash, tool_fs, tool_web's fetch), in the order the prompt lists them.
EXAMPLE_TOOLS = ["bash", "edit", "glob", "grep", "read", "web_fetch", "write"]

runner = CliRunner()


@pytest.mark.parametrize("example", sorted(CASES))
def test_prompt_golden(example: str, snapshot: SnapshotAssertion) -> None:
    deployment = load_deployment(EXAMPLES / example)
    assert deployment.model == "deepseek-v4-flash"
    facts = {"model": deployment.model, **CASES[example]}
    assembly = assemble_deployment(deployment, facts)
    system = render_prompt(assembly)
    assert "{{" not in system
    assert "powered by the deepseek-v4-flash model" in system
    assert system == snapshot(name="system")
    assert msgspec.to_builtins(assembly.tools) == snapshot(name="tools")


def test_dsh_prompt_fills_model_from_the_deployment() -> None:
    result = runner.invoke(app, ["prompt", "--config", str(CODING)])
    assert result.exit_code == 0, result.output
    assert "powered by the deepseek-v4-flash model" in result.stdout
    assert result.stdout.startswith("# system prompt\n\nYou are an AI agent running on dsh")
    assert "# tools (7)" in result.stdout


def test_dsh_prompt_model_option_overrides_the_deployment() -> None:
    result = runner.invoke(app, ["prompt", "--config", str(CODING), "--model", "deepseek-v4-pro"])
    assert result.exit_code == 0, result.output
    assert "powered by the deepseek-v4-pro model" in result.stdout


def test_dsh_prompt_json() -> None:
    result = runner.invoke(app, ["prompt", "--config", str(ACP), "--cwd", "/w", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["variables"] == {"model": "deepseek-v4-flash", "cwd": "/w"}
    assert "The workspace is /w;" in payload["system"]
    assert [tool["name"] for tool in payload["tools"]] == EXAMPLE_TOOLS
    assert payload["contexts"] == ""


def test_dsh_prompt_acp_without_cwd_fails_loudly() -> None:
    result = runner.invoke(app, ["prompt", "--config", str(ACP)])
    assert isinstance(result.exception, PromptRenderError)
    assert str(result.exception) == (
        'prompt variable "{{cwd}}" has no value for this assembly (section "deployment:persona")'
    )


def test_a_persona_typo_fails_naming_the_section_and_the_registered_variables(tmp_path: Path) -> None:
    typo = tmp_path / "typo.yml"
    typo.write_text(CODING.read_text(encoding="utf-8").replace("{{model}}", "{{modle}}"), encoding="utf-8")
    result = runner.invoke(app, ["prompt", "--config", str(typo)])
    assert isinstance(result.exception, PromptRenderError)
    assert result.exception.section == "deployment:persona"
    assert str(result.exception) == (
        'unknown prompt variable "{{modle}}" in section "deployment:persona"; registered variables: model, cwd'
    )


def test_the_dsh_command_reports_a_render_error_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "typo.yml"
    typo.write_text(CODING.read_text(encoding="utf-8").replace("{{model}}", "{{modle}}"), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["dsh", "prompt", "--config", str(typo)])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert (
        'error: unknown prompt variable "{{modle}}" in section "deployment:persona"; registered variables: model, cwd'
        in err
    )


def test_dsh_prompt_with_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["prompt", "--config", str(tmp_path / "missing.yml")])
    assert isinstance(result.exception, ConfigError)
    assert "cannot read the deployment file" in str(result.exception)


def test_dsh_prompt_output_golden(snapshot: SnapshotAssertion) -> None:
    result = runner.invoke(app, ["prompt", "--config", str(ACP), "--cwd", "/workspace/project"])
    assert result.exit_code == 0, result.output
    assert result.stdout == snapshot


def test_dsh_prompt_needs_the_prompt_plugin(tmp_path: Path) -> None:
    bare = tmp_path / "bare.yml"
    bare.write_text("model: m\nplugins: []\n", encoding="utf-8")
    result = runner.invoke(app, ["prompt", "--config", str(bare)])
    assert isinstance(result.exception, ServiceNotFoundError)
    assert str(result.exception).startswith('no service "system-prompt" is provided here')
