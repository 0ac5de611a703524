"""`dsh sessions stats`, `sessions list --usage` and the per-turn figures of `sessions show`, as a user runs them:
prices from a deployment's `stats` plugin, else DeepSeek's published prices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dsh.plugins.stats import DEEPSEEK_PRICES
from dsh.runtime.cli.app import app

ROOT = Path(__file__).resolve().parents[3]
HARNESS = ROOT / "fixtures" / "harness"
runner = CliRunner()


def run(*args: str, columns: int = 80) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, str]:
    """A store holding the subagent recording (parent and fork child); its path and both ids."""
    monkeypatch.delenv("DSH_CONFIG", raising=False)
    path = str(tmp_path / "s.db")
    scenario = HARNESS / "subagent-fork-in-process"
    parent = json.loads(run("sessions", "import", str(scenario / "session.jsonl"), "--store", path, "--json"))
    child = json.loads(
        run("sessions", "import", str(scenario / "session.1.jsonl"), "--store", path, "--json")
    )
    return path, parent["id"], child["id"]


def _usage(path: Path) -> tuple[int, int, int]:
    """Input, output and cache-read tokens of the usage chunks of a log's own events."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    own = lines[0].get("seedLength") or 0
    usages = [
        row["data"]["chunk"]["usage"]
        for row in lines[1:]
        if row["type"] == "assistant/chunk" and row["seq"] >= own and row["data"]["chunk"]["type"] == "usage"
    ]
    return (
        sum(u["inputTokens"] for u in usages),
        sum(u["outputTokens"] for u in usages),
        sum(u.get("cacheReadTokens", 0) for u in usages),
    )


def test_stats_json_has_the_figures_and_the_children(store: tuple[str, str, str]) -> None:
    path, parent, child = store
    data = json.loads(run("sessions", "stats", parent[:8], "--store", path, "--json"))
    for key in (
        "turns",
        "steps",
        "model_calls",
        "tool_calls",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cost",
    ):
        assert key in data
    scenario = HARNESS / "subagent-fork-in-process"
    tokens_in, tokens_out, cached = _usage(scenario / "session.jsonl")
    assert (data["input_tokens"], data["output_tokens"], data["cache_read_tokens"]) == (
        tokens_in,
        tokens_out,
        cached,
    )
    flash = next(p for p in DEEPSEEK_PRICES if p.model == "deepseek-v4-flash")
    assert flash.cache_read is not None
    assert data["cost"] == pytest.approx(
        (tokens_in * flash.input + tokens_out * flash.output + cached * flash.cache_read) / 1e6
    )
    assert data["currency"] == "USD"
    assert data["tools"] == {
        "subagent_fork": {"calls": 1, "errors": 0, "time_ms": data["tools"]["subagent_fork"]["time_ms"]}
    }
    [kid] = data["children"]
    assert kid["session"] == child
    assert kid["how"] == "fork @42"
    child_in, child_out, child_cached = _usage(scenario / "session.1.jsonl")
    assert (kid["input_tokens"], kid["output_tokens"], kid["cache_read_tokens"]) == (
        child_in,
        child_out,
        child_cached,
    )
    assert data["children_total"]["input_tokens"] == child_in
    assert data["total"]["input_tokens"] == tokens_in + child_in


def test_stats_as_text_names_the_tools_calls_and_children(store: tuple[str, str, str]) -> None:
    path, parent, child = store
    text = run("sessions", "stats", parent, "--store", path)
    assert f"session {parent}" in text
    assert "2 turns, 3 steps, 3 model calls, 1 tool call" in text
    assert "subagent_fork" in text
    assert child[:6] in text
    assert "total:" in text


def test_a_deployment_sets_the_prices(store: tuple[str, str, str], tmp_path: Path) -> None:
    path, parent, _child = store
    config = tmp_path / "deployment.yml"
    config.write_text(
        "plugins:\n"
        "  - id: stats\n"
        "    use: stats\n"
        "    config:\n"
        "      currency: EUR\n"
        "      prices: [{provider: '*', model: '*', input: 1000000, output: 0, cache_read: 0}]\n"
    )
    data = json.loads(run("sessions", "stats", parent, "--store", path, "--json", "--config", str(config)))
    assert data["currency"] == "EUR"
    assert data["cost"] == pytest.approx(data["input_tokens"])  # one unit per input token
    bare = tmp_path / "bare.yml"
    bare.write_text("plugins:\n  - id: tools\n    use: tools\n")
    unpriced = json.loads(run("sessions", "stats", parent, "--store", path, "--json", "--config", str(bare)))
    assert unpriced["cost"] is None
    assert "cost unknown" in run("sessions", "stats", parent, "--store", path, "--config", str(bare))


def test_list_usage_and_show_per_turn(store: tuple[str, str, str]) -> None:
    path, parent, child = store
    listed = {s["id"]: s for s in json.loads(run("sessions", "list", "--usage", "--store", path, "--json"))}
    stats = json.loads(run("sessions", "stats", parent, "--store", path, "--json"))
    assert listed[parent]["input_tokens"] == stats["input_tokens"]
    assert listed[parent]["cost"] == pytest.approx(stats["cost"])
    assert listed[child]["input_tokens"] == stats["children"][0]["input_tokens"]
    table = run("sessions", "list", "--usage", "--store", path, columns=200)
    assert f"{stats['input_tokens']:,}/{stats['output_tokens']:,}/{stats['cache_read_tokens']:,}" in table
    assert "tokens" not in run("sessions", "list", "--store", path)  # without --usage, the plain list
    shown = run("sessions", "show", parent, "--store", path)
    first, second = stats["per_turn"]
    assert f"{first['steps']} step, {first['model_calls']} model call" in shown
    assert f"{second['steps']} steps, {second['model_calls']} model calls" in shown
