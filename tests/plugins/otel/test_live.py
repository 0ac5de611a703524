"""The `otel` plugin under a replayed run (a parent that spawns a subagent, through the real loop): the spans a
real OTLP/HTTP receiver on 127.0.0.1 gets match the replayed logs; with no collector listening the run is the same
and one warning says the spans were dropped."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from dsh.replay import Rerun, load_scenario, rerun

from .receiver import Receiver, closed_port, otlp_receiver

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "fixtures" / "authored" / "spawn-subagent"
DEFAULT_DEPLOYMENT = ROOT / "replay" / "default-deployment.yml"
NS = 1_000_000


def _scenario(directory: Path, otel: dict[str, Any]) -> Path:
    """The spawn-subagent recording as a scenario whose deployment is replay's default plus `otel`."""
    directory.mkdir()
    for log in SOURCE.glob("session*.jsonl"):
        shutil.copy(log, directory / log.name)
    doc = yaml.safe_load((SOURCE / "scenario.yml").read_text())
    doc["deployment"] = "deployment.yml"
    (directory / "scenario.yml").write_text(json.dumps(doc))
    deployment = yaml.safe_load(DEFAULT_DEPLOYMENT.read_text())
    deployment["plugins"].append({"id": "otel", "use": "otel", "config": otel})
    (directory / "deployment.yml").write_text(json.dumps(deployment))
    return directory


def _replay(directory: Path) -> Rerun:
    async def go() -> Rerun:
        return await rerun(load_scenario(directory))

    return anyio.run(go)


def _rows(log: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.decode().splitlines()[1:]]


def _check(receiver: Receiver, ran: Rerun) -> None:
    assert ran.divergence is None
    spans = receiver.spans
    assert len({span.trace_id for span in spans}) == 1
    by_id = {span.span_id: span for span in spans}
    (parent_info, _), (child_info, _) = ran.logs
    sessions = {span.attributes["gen_ai.conversation.id"]: span for span in receiver.named("session ")}
    assert set(sessions) == {parent_info.id, child_info.id}
    assert sessions[parent_info.id].parent_id == ""
    spawner = by_id[sessions[child_info.id].parent_id]  # the child hangs under the call that spawned it
    assert spawner.attributes["gen_ai.tool.name"] == "subagent"
    assert child_info.spawned_by is not None
    assert spawner.attributes["gen_ai.tool.call.id"] == child_info.spawned_by.call_id
    for info, log in ran.logs:
        rows = _rows(log)
        mine = [s for s in spans if s.attributes.get("gen_ai.conversation.id") == info.id]
        turns = [s for s in mine if s.name == "invoke_agent dsh"]
        assert sorted(t.start for t in turns) == sorted(
            r["time"] * NS for r in rows if r["type"] == "turn/start"
        )
        assert sorted(t.end for t in turns) == sorted(r["time"] * NS for r in rows if r["type"] == "turn/end")
        chats = [s for s in mine if s.name.startswith("chat ")]
        finishes = [
            r for r in rows if r["type"] == "assistant/chunk" and r["data"]["chunk"]["type"] == "finish"
        ]
        assert len(chats) == len(finishes)
        usages = [
            r["data"]["chunk"]["usage"]
            for r in rows
            if r["type"] == "assistant/chunk" and r["data"]["chunk"]["type"] == "usage"
        ]
        assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats) == sum(
            u["outputTokens"] for u in usages
        )
        tools = sorted(
            (s.attributes["gen_ai.tool.name"], s.attributes["gen_ai.tool.call.id"])
            for s in mine
            if s.name.startswith("execute_tool")
        )
        assert tools == sorted(
            (r["data"]["name"], r["data"]["callId"]) for r in rows if r["type"] == "tool/call"
        )
        assert all("gen_ai.tool.call.arguments" not in s.attributes for s in mine)  # no content by default


def test_the_live_plugin_exports_a_replayed_run(tmp_path: Path) -> None:
    with otlp_receiver() as receiver:
        ran = _replay(
            _scenario(
                tmp_path / "scenario", {"endpoint": receiver.url + "/v1/traces", "schedule_delay_ms": 50}
            )
        )
    _check(receiver, ran)


def test_a_collector_that_is_down_costs_the_run_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    down = closed_port() + "/v1/traces"
    ran = _replay(
        _scenario(tmp_path / "scenario", {"endpoint": down, "timeout_s": 1, "schedule_delay_ms": 50})
    )
    assert ran.divergence is None
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in warnings] == ["dsh.otel"]
    assert "could not export spans" in warnings[0].getMessage()
