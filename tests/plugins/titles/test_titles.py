"""The `titles` plugin in a scripted recording (fixtures/authored/session-title): the request it logs is the
original's prompt framing the first human message, the title follows with the call's usage, it is asked once, a
replay serves it from the recording, a recording without one replays without it, and a failed call leaves the turn
alone. `dsh sessions title` names a session by hand."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from dsh.plugins.titles import TitlesConfig, normalise_title, title_prompt
from dsh.plugins.titles._plugin import _fit
from dsh.replay import load_scenario, record, rerun
from dsh.runtime.cli.app import app

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = ROOT / "fixtures" / "authored" / "session-title"
runner = CliRunner()


def rows(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()[1:]]


def test_the_recording_asks_once_with_the_original_prompt_and_logs_the_title() -> None:
    events = rows((SCENARIO / "session.jsonl").read_text())
    [request] = [e for e in events if e["type"] == "session/title-llm-request"]
    [title] = [e for e in events if e["type"] == "session/title"]
    first_turn_end = next(e for e in events if e["type"] == "turn/end")
    assert first_turn_end["seq"] < request["seq"] < title["seq"]  # after the first completed turn
    first_prompt = next(e for e in events if e["type"] == "user/message")
    data = request["data"]
    assert data["titleProvider"] == "titles"
    assert data["messageSeqs"] == [first_prompt["seq"]]
    assert data["route"] == {"provider": "scripted", "model": "scripted"}
    assert data["system"] == title_prompt(TitlesConfig())
    assert "Create a concise title for an AI coding-assistant session" in data["system"]
    assert data["maxTokens"] == TitlesConfig().max_output_tokens
    [message] = data["messages"]
    framed = message["content"][0]["text"]
    assert framed.startswith("Generate the session title from this JSON array of human messages:\n")
    text = first_prompt["data"]["content"][0]["text"]
    assert json.loads(framed.split("\n", 1)[1]) == [{"seq": first_prompt["seq"], "text": text}]
    assert title["data"]["title"] == "Ring buffer basics"  # the scripted reply's quotes removed
    assert title["data"]["source"] == {"kind": "provider", "provider": "titles", "model": data["route"]}
    assert title["data"]["usage"]["outputTokens"] > 0


def test_a_replay_serves_the_title_call_from_the_recording() -> None:
    ran = anyio.run(lambda: rerun(load_scenario(SCENARIO)))
    assert ran.divergence is None
    [(_, log)] = ran.logs
    replayed = rows(log.decode())
    assert [e["data"]["title"] for e in replayed if e["type"] == "session/title"] == ["Ring buffer basics"]
    assert sum(e["type"] == "session/title-llm-request" for e in replayed) == 1


def test_a_recording_without_a_title_call_replays_without_one(tmp_path: Path) -> None:
    scenario = tmp_path / "no-title"
    scenario.mkdir()
    shutil.copy(ROOT / "fixtures" / "harness" / "text-turn" / "session.jsonl", scenario / "session.jsonl")
    (scenario / "scenario.yml").write_text(json.dumps({"deployment": str(SCENARIO / "deployment.yml")}))
    ran = anyio.run(lambda: rerun(load_scenario(scenario)))
    assert ran.divergence is None
    [(_, log)] = ran.logs
    assert not [e for e in rows(log.decode()) if e["type"] == "session/title-llm-request"]


def test_a_failed_title_call_is_a_warning_and_no_title(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    scenario = tmp_path / "failing"
    scenario.mkdir()
    for name in ("scenario.yml", "deployment.yml"):
        shutil.copy(SCENARIO / name, scenario / name)
    replies = scenario / "replies.yml"
    replies.write_text(
        "replies:\n"
        "  - text: One sentence.\n"
        "  - error: {code: SERVER, message: the title model is down}\n"
        "  - text: Another.\n"
    )
    caplog.set_level(logging.WARNING, logger="dsh.titles")
    [(_, log)] = anyio.run(lambda: record(load_scenario(scenario), replies=replies))
    events = rows(log.decode())
    assert [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"] == [
        "completed",
        "completed",
    ]
    assert sum(e["type"] == "session/title-llm-request" for e in events) == 1  # asked once, not again
    assert not [e for e in events if e["type"] == "session/title"]
    assert any("gave no title" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("raw", "title"),
    [
        ('"Ring buffer basics"', "Ring buffer basics"),
        ("**Fix the upload test**\n", "Fix the upload test"),
        ("Title:\x1b[31m red\nsecond line", "Title: [31m red second line"),
        ("  ", ""),
        ("x" * 500, "x" * 120),
    ],
)
def test_titles_are_one_clean_line(raw: str, title: str) -> None:
    assert normalise_title(raw) == title


def test_a_long_first_message_is_cut_to_the_input_limit() -> None:
    framed = _fit(4, "é" * 10_000, 500)
    assert len(framed.encode()) <= 500
    assert json.loads(framed.split("\n", 1)[1])[0]["seq"] == 4


def test_a_config_names_provider_and_model_together() -> None:
    from dsh.runtime.kernel import ConfigError, decode_plugin_config

    with pytest.raises(ConfigError, match="provider and model together"):
        decode_plugin_config(TitlesConfig, {"provider": "p"}, plugin="titles")


def test_a_title_set_by_hand_is_listed_and_kept(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    imported = runner.invoke(
        app, ["sessions", "import", str(SCENARIO / "session.jsonl"), "--store", store, "--json"]
    )
    session = json.loads(imported.output)["id"]
    named = runner.invoke(
        app, ["sessions", "title", session[:6], "  Ring   buffers, by hand ", "--store", store]
    )
    assert named.exit_code == 0, named.output
    assert "Ring buffers, by hand" in named.output
    listed = json.loads(
        runner.invoke(app, ["sessions", "list", "--usage", "--json", "--store", store]).output
    )
    assert listed[0]["title"] == "Ring buffers, by hand"
    shown = json.loads(runner.invoke(app, ["sessions", "show", session, "--json", "--store", store]).output)
    assert shown["title"] == "Ring buffers, by hand"
    empty = runner.invoke(app, ["sessions", "title", session, "   ", "--store", store])
    assert empty.exit_code != 0
