"""`dsh sessions trace`: a stored session and its child sent as one trace to a real OTLP/HTTP receiver on
127.0.0.1, every span and attribute checked against the log (read here with plain `json`); nothing sent, and an
error, when no collector listens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dsh.plugins.otel import TraceExportError
from dsh.runtime.cli.app import app

from .receiver import closed_port, otlp_receiver

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = ROOT / "fixtures" / "harness" / "subagent-fork-in-process"
runner = CliRunner()
NS = 1_000_000


def run(*args: str, env: dict[str, str] | None = None, code: int = 0) -> str:
    result = runner.invoke(app, list(args), env={"DSH_CONFIG": "", **(env or {})})
    assert result.exit_code == code, result.output
    return result.output


def own_events(path: Path) -> list[dict[str, Any]]:
    """A log's own events (a fork child's first `seedLength` are its parent's), packed rows left packed."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    seed = lines[0].get("seedLength") or 0
    return [row for row in lines[1:] if row.get("seq", row.get("seq0", 0)) >= seed]


def usage(rows: list[dict[str, Any]]) -> tuple[int, int]:
    usages = [
        r["data"]["chunk"]["usage"]
        for r in rows
        if r["type"] == "assistant/chunk" and r["data"]["chunk"]["type"] == "usage"
    ]
    return sum(u["inputTokens"] + u.get("cacheReadTokens", 0) for u in usages), sum(
        u["outputTokens"] for u in usages
    )


@pytest.fixture
def stored(tmp_path: Path) -> tuple[str, str, str]:
    store = str(tmp_path / "s.db")
    parent = json.loads(
        run("sessions", "import", str(SCENARIO / "session.jsonl"), "--store", store, "--json")
    )["id"]
    child = json.loads(
        run("sessions", "import", str(SCENARIO / "session.1.jsonl"), "--store", store, "--json")
    )["id"]
    return store, parent, child


def test_a_stored_session_is_one_trace_of_turns_calls_and_tools(stored: tuple[str, str, str]) -> None:
    store, parent, child = stored
    with otlp_receiver() as receiver:
        out = run(
            "sessions",
            "trace",
            parent,
            "--store",
            store,
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_EXPORTER_OTLP_HEADERS": "x-team=dsh"},
        )
    assert receiver.paths == ["/v1/traces"]
    assert receiver.headers[0].get("x-team") == "dsh"
    spans = receiver.spans
    assert f"{len(spans)} spans" in out
    assert len({span.trace_id for span in spans}) == 1
    assert spans[0].trace_id in out
    assert all(span.resource["service.name"] == "dsh" for span in spans)
    by_id = {span.span_id: span for span in spans}
    sessions = {span.attributes["gen_ai.conversation.id"]: span for span in receiver.named("session ")}
    assert set(sessions) == {parent, child}
    assert sessions[parent].parent_id == ""  # the trace's root
    assert sessions[child].parent_id == sessions[parent].span_id  # imported: no spawning call is known

    for session, log in ((parent, SCENARIO / "session.jsonl"), (child, SCENARIO / "session.1.jsonl")):
        rows = own_events(log)
        mine = [s for s in spans if s.attributes.get("gen_ai.conversation.id") == session]
        turns = [s for s in mine if s.name == "invoke_agent dsh"]
        starts = [r["time"] for r in rows if r["type"] == "turn/start"]
        assert len(turns) == len(starts)
        assert sorted(t.start for t in turns if t.start) == sorted(t * NS for t in starts if t > 0)
        assert all(by_id[t.parent_id] is sessions[session] for t in turns)
        chats = [s for s in mine if s.attributes.get("gen_ai.operation.name") == "chat"]
        finishes = [
            r for r in rows if r["type"] == "assistant/chunk" and r["data"]["chunk"]["type"] == "finish"
        ]
        assert len(chats) == len(finishes)
        for chat in chats:
            assert chat.name == "chat deepseek-v4-flash"
            assert chat.attributes["gen_ai.request.model"] == "deepseek-v4-flash"
            assert chat.attributes["gen_ai.provider.name"] == "deepseek-official"
            assert chat.attributes["gen_ai.response.finish_reasons"] in (("stop",), ("tool_calls",))
            assert chat.kind == 3  # SPAN_KIND_CLIENT
            assert by_id[chat.parent_id].name == "invoke_agent dsh"
        tokens_in, tokens_out = usage(rows)
        assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == tokens_in
        assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats) == tokens_out
        calls = [r["data"] for r in rows if r["type"] == "tool/call"]
        tools = [s for s in mine if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
        assert [(t.attributes["gen_ai.tool.name"], t.attributes["gen_ai.tool.call.id"]) for t in tools] == [
            (c["name"], c["callId"]) for c in calls
        ]
        for span in mine:
            assert "gen_ai.output.messages" not in span.attributes  # no content unless asked
            assert "gen_ai.tool.call.arguments" not in span.attributes


def test_content_is_exported_only_when_asked(stored: tuple[str, str, str]) -> None:
    store, parent, _child = stored
    with otlp_receiver() as receiver:
        run(
            "sessions",
            "trace",
            parent,
            "--store",
            store,
            "--content",
            env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.url + "/custom"},
        )
    assert receiver.paths == ["/custom"]  # the traces endpoint is used as given
    [tool] = receiver.named("execute_tool")
    [call] = [r["data"] for r in own_events(SCENARIO / "session.jsonl") if r["type"] == "tool/call"]
    assert tool.attributes["gen_ai.tool.call.arguments"] == call["arguments"]
    assert "gen_ai.tool.call.result" in tool.attributes
    outputs = [s.attributes.get("gen_ai.output.messages") for s in receiver.named("chat ")]
    assert any(output and "text" in output for output in outputs)


def test_no_collector_is_an_error(stored: tuple[str, str, str], caplog: pytest.LogCaptureFixture) -> None:
    store, parent, _child = stored
    result = runner.invoke(
        app,
        ["sessions", "trace", parent, "--store", store],
        env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": closed_port(),
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2",
            "DSH_CONFIG": "",
        },
    )
    assert isinstance(result.exception, TraceExportError)  # `dsh` prints it as one `error:` line, exit 2
    assert "could not export session" in str(result.exception)
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in str(result.exception)
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]  # dsh's words, not the SDK's
