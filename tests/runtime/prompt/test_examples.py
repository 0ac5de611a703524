"""Prompt goldens of the example deployments, and the `dsh prompt` command that shows them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import msgspec
import pytest
from syrupy.assertion import SnapshotAssertion
from typer.testing import CliRunner

from dsh.runtime.cli import main
from dsh.runtime.cli.app import app
from dsh.runtime.kernel import (
    ConfigError,
    Context,
    ServiceNotFoundError,
    load_deployment,
    load_deployment_into,
)
from dsh.runtime.prompt import SYSTEM_PROMPT, AssembleContext, PromptRenderError, render_prompt
from dsh.runtime.session import STORE, SessionStore

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CODING = EXAMPLES / "coding-agent.yml"
ACP = EXAMPLES / "acp-agent.yml"
# The facts the agent loop would state for these deployments: the `model:` key, and for ACP the client's cwd.
CASES = {"coding-agent.yml": {}, "acp-agent.yml": {"cwd": "/workspace/project"}}
# Every tool the examples load, and the guidance sections that come with them (web_search has no backend there).
TOOLS = ["bash", "edit", "glob", "grep", "read", "todo_write", "web_fetch", "write"]
# the terminal agent also delegates, and runs commands and subagents as background jobs
CODING_TOOLS = sorted([*TOOLS, "subagent", "subagent_fork", "job_output", "job_kill", "job_list"])
SECTIONS = ["tool:read", "tool:write", "tool:edit", "tool:glob", "tool:grep", "tool:bash", "tool:web_fetch"]
CODING_SECTIONS = [*SECTIONS[:6], "tool:jobs", *SECTIONS[6:]]

runner = CliRunner()


@pytest.mark.parametrize("example", sorted(CASES))
def test_prompt_golden(example: str, snapshot: SnapshotAssertion, tmp_path: Path) -> None:
    deployment = load_deployment(EXAMPLES / example)
    assert deployment.model == "deepseek-v4-flash"
    assert deployment.provider == "deepseek-official"  # dsh.plugins.llm_openai's default route id
    with SessionStore(tmp_path / "sessions.db") as store:
        ctx = Context()
        ctx.provide(STORE, store)  # as the dsh command does: the agent plugin needs it
        load_deployment_into(ctx, deployment)
        sp = ctx.get(SYSTEM_PROMPT)
        facts = {"model": deployment.model, **CASES[example]}
        assembly = anyio.run(sp.assemble, AssembleContext(ctx=ctx, facts=facts))
        ctx.dispose()
    system = render_prompt(assembly)
    assert "{{" not in system
    assert list(assembly.variables) == ["model", "cwd"]  # the agent plugin's, registered once
    assert "powered by the deepseek-v4-flash model" in system
    sections = CODING_SECTIONS if example == "coding-agent.yml" else SECTIONS
    assert [s.name for s in assembly.sections] == ["harness:identity", "deployment:persona", *sections]
    assert [tool.name for tool in assembly.tools] == (
        CODING_TOOLS if example == "coding-agent.yml" else TOOLS
    )
    assert system == snapshot(name="system")
    assert msgspec.to_builtins(assembly.tools) == snapshot(name="tools")


def test_dsh_prompt_fills_model_from_the_deployment() -> None:
    result = runner.invoke(app, ["prompt", "--config", str(CODING)])
    assert result.exit_code == 0, result.output
    assert "powered by the deepseek-v4-flash model" in result.stdout
    assert result.stdout.startswith("# system prompt\n\nYou are an AI agent running on dsh")
    assert "To look at a file, use read, not shell commands like cat" in result.stdout
    assert "[exit code: N]" in result.stdout
    assert f"# tools ({len(CODING_TOOLS)})\n" in result.stdout


def test_dsh_prompt_renders_every_tool_section_and_schema_with_a_cwd() -> None:
    result = runner.invoke(app, ["prompt", "--config", str(CODING), "--cwd", "/tmp", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["variables"] == {"model": "deepseek-v4-flash", "cwd": "/tmp"}
    assert [tool["name"] for tool in payload["tools"]] == CODING_TOOLS
    system = payload["system"]
    positions = [
        system.index(text) for text in ("powered by", "use read", "use glob", "[exit code: N]", "cite")
    ]
    assert positions == sorted(positions)  # persona first, then the tool guidance in section order


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
    assert [tool["name"] for tool in payload["tools"]] == TOOLS
    assert payload["contexts"] == ""


def test_dsh_prompt_acp_without_cwd_fails_loudly() -> None:
    result = runner.invoke(app, ["prompt", "--config", str(ACP)])
    assert isinstance(result.exception, PromptRenderError)
    assert str(result.exception) == (
        'prompt variable "{{cwd}}" has no value for this assembly (section "deployment:persona"). '
        "dsh prompt states it from --cwd"
    )
    assert result.exception.variable == "cwd"


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


def test_a_model_reference_without_the_agent_plugin_says_to_add_it(tmp_path: Path) -> None:
    deck = tmp_path / "no-agent.yml"
    deck.write_text(
        "model: m\nplugins:\n  - id: prompt\n    use: dsh.runtime.prompt\n"
        "    config: {persona: 'powered by the {{model}} model'}\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["prompt", "--config", str(deck)])
    assert isinstance(result.exception, PromptRenderError)
    assert (result.exception.section, result.exception.variable) == ("deployment:persona", "model")
    assert str(result.exception) == (
        'unknown prompt variable "{{model}}" in section "deployment:persona"; registered variables: (none). '
        "{{model}} is registered by the agent plugin: add `{id: agent, use: agent}` to the deployment"
    )


def test_a_typo_with_the_agent_plugin_loaded_gets_no_agent_hint(tmp_path: Path) -> None:
    typo = tmp_path / "typo.yml"
    typo.write_text(CODING.read_text(encoding="utf-8").replace("{{model}}", "{{modle}}"), encoding="utf-8")
    result = runner.invoke(app, ["prompt", "--config", str(typo)])
    assert isinstance(result.exception, PromptRenderError)
    assert "agent plugin" not in str(result.exception)


def test_dsh_prompt_needs_the_prompt_plugin(tmp_path: Path) -> None:
    bare = tmp_path / "bare.yml"
    bare.write_text("model: m\nplugins: []\n", encoding="utf-8")
    result = runner.invoke(app, ["prompt", "--config", str(bare)])
    assert isinstance(result.exception, ServiceNotFoundError)
    assert str(result.exception).startswith('no service "system-prompt" is provided here')
