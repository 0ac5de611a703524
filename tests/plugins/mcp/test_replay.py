"""A recorded MCP session replays with no server: fixtures/authored/mcp-time was recorded against mcp-server-time;
its re-run serves the recorded result and starts no process (PATH holds no server, and the replay matches), while
`tools: {mcp__time__get_current_time: live}` runs the real server again."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import msgspec
import pytest
import yaml

from dsh.replay import load_scenario, rerun
from tests.plugins.mcp.harness import time_server

SCENARIO = Path(__file__).parents[3] / "fixtures" / "authored" / "mcp-time"


def test_the_recorded_scenario_replays_with_no_server_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert shutil.which("mcp-server-time") is None
    result = anyio.run(lambda: rerun(load_scenario(SCENARIO)))
    assert result.divergence is None, result.divergence
    [call] = result.tool_calls
    assert call.name == "mcp__time__get_current_time"
    assert call.result is not None
    assert '"timezone": "Asia/Tokyo"' in call.result
    assert not call.is_error


def test_a_live_mcp_tool_runs_the_server_in_a_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{Path(time_server()).parent}:/usr/bin:/bin")
    live = tmp_path / "mcp-time"
    shutil.copytree(SCENARIO, live, ignore=shutil.ignore_patterns("__snapshots__"))
    doc = yaml.safe_load((live / "scenario.yml").read_text())
    doc["tools"] = {"mcp__time__get_current_time": "live"}
    (live / "scenario.yml").write_text(yaml.safe_dump(doc))
    result = anyio.run(lambda: rerun(load_scenario(live)))
    [call] = result.tool_calls
    assert call.result is not None
    recorded = msgspec.json.decode(call.result)
    assert recorded["timezone"] == "Asia/Tokyo"
    assert recorded["datetime"].endswith("+09:00")
    assert result.divergence is None, result.divergence  # the skeleton holds no result text
