"""Wire replay (replay/driver/_wire.py): every scenario of fixtures/ replays through the real llm_openai adapter and a local
server with the results of chunk replay; a broken adapter (request building, stream parsing) fails it and not chunk
replay; recorded failures are served as the provider sends them (an HTTP 429, an error mid-stream) and retried as
recorded; and the stale-recording checks (replay/driver/_prompts.py) hold in either mode."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

import dsh.plugins.llm_openai._adapter as openai_adapter
import dsh.plugins.llm_openai._mapping as openai_mapping
from dsh.plugins.llm_openai._errors import failure_from_response, failure_from_stream_error
from dsh.plugins.llm_openai._wire import build_body
from dsh.replay import Rerun, Scenario, golden_jsonl, load_scenario, rerun
from dsh.replay.driver._scenario import DEFAULT_DEPLOYMENT, discover
from dsh.replay.driver._wire import WireServer, request_problems
from dsh.runtime.llm import CallConfig, LlmRequest, TokenUsage, ToolSchema

FIXTURES = Path(__file__).parents[2] / "fixtures"
SCENARIOS = discover(FIXTURES)
ADAPTER = "dsh.plugins.llm_openai._adapter"


def replayed(scenario: Scenario, *, wire: bool) -> Rerun:
    return anyio.run(lambda: rerun(scenario, wire=wire))


def goldens(result: Rerun) -> tuple[list[str], str]:
    return [golden_jsonl(log) for _, log in result.logs], result.view


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_fixture_replays_on_the_wire_as_it_does_from_chunks(scenario: Scenario) -> None:
    chunks, wire = replayed(scenario, wire=False), replayed(scenario, wire=True)
    assert chunks.divergence is None
    assert wire.divergence is None
    assert goldens(wire) == goldens(chunks)


def test_a_recording_the_adapter_cannot_send_is_pinned_to_chunks_and_fails_on_the_wire() -> None:
    scenario = load_scenario(FIXTURES / "harness" / "inline-image-prompt")
    assert scenario.doc.transport == "chunks"
    forced = Scenario(
        scenario.name,
        scenario.log,
        scenario.directory,
        msgspec.structs.replace(scenario.doc, transport="wire"),
    )
    result = replayed(forced, wire=False)
    assert result.divergence is not None
    assert "wire call (1,1,1)" in result.divergence
    assert "UNSUPPORTED_CONTENT" in result.divergence


# -- a broken adapter ---------------------------------------------------------------------------------------


def test_a_request_builder_that_drops_the_tools_fails_wire_replay_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    build = build_body

    def without_tools(request: LlmRequest) -> dict[str, Any]:
        body = build(request)
        body.pop("tools", None)
        return body

    monkeypatch.setattr(f"{ADAPTER}.build_body", without_tools)
    scenario = load_scenario(FIXTURES / "harness" / "tool-call-turn")
    assert replayed(scenario, wire=False).divergence is None
    divergence = replayed(scenario, wire=True).divergence
    assert divergence is not None
    assert "wire call (1,1,1)" in divergence
    assert "the recording calls at this step" in divergence


def test_a_request_builder_that_sends_two_assistant_turns_in_a_row_fails_wire_replay_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    build = build_body

    def doubled(request: LlmRequest) -> dict[str, Any]:
        body = build(request)
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        if assistants:
            body["messages"].append(dict(assistants[-1], tool_calls=[]))
            body["messages"].append(dict(assistants[-1], tool_calls=[]))
        return body

    monkeypatch.setattr(f"{ADAPTER}.build_body", doubled)
    scenario = load_scenario(FIXTURES / "harness" / "multi-turn")
    assert replayed(scenario, wire=False).divergence is None
    divergence = replayed(scenario, wire=True).divergence
    assert divergence is not None
    assert "wire call (2,1,1)" in divergence
    assert "roles must alternate" in divergence


def test_a_parser_that_loses_the_cache_reads_fails_wire_replay_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_cache(usage: Any) -> TokenUsage:
        return TokenUsage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)

    monkeypatch.setattr(openai_mapping, "map_usage", no_cache)
    scenario = load_scenario(FIXTURES / "harness" / "text-turn")
    assert replayed(scenario, wire=False).divergence is None
    divergence = replayed(scenario, wire=True).divergence
    assert divergence is not None
    assert "wire call (1,1,1)" in divergence
    assert "its usage are" in divergence


def test_a_parser_that_drops_text_fails_wire_replay_only(monkeypatch: pytest.MonkeyPatch) -> None:
    feed = openai_mapping.ChunkMapper.feed

    def lossy(self: openai_mapping.ChunkMapper, chunk: Any) -> list[Any]:
        out = feed(self, chunk)
        return [c for c in out if type(c).__name__ != "TextDelta"] if len(out) == 1 else out

    monkeypatch.setattr(openai_mapping.ChunkMapper, "feed", lossy)
    scenario = load_scenario(FIXTURES / "harness" / "text-turn")
    assert replayed(scenario, wire=False).divergence is None
    divergence = replayed(scenario, wire=True).divergence
    assert divergence is not None
    assert "the adapter's answer differs from the recording" in divergence


def test_a_stub_adapter_that_raises_fails_wire_replay_only(monkeypatch: pytest.MonkeyPatch) -> None:
    async def stub(self: Any, request: LlmRequest) -> Any:
        raise RuntimeError("not implemented")
        yield  # an async generator, as the real one

    monkeypatch.setattr(openai_adapter.OpenAICompatibleAdapter, "stream", stub)
    running: list[WireServer] = []
    start, stop = WireServer.start, WireServer.stop

    def started(self: WireServer) -> WireServer:
        running.append(self)
        return start(self)

    def stopped(self: WireServer) -> None:
        running.remove(self)
        stop(self)

    monkeypatch.setattr(WireServer, "start", started)
    monkeypatch.setattr(WireServer, "stop", stopped)
    scenario = load_scenario(FIXTURES / "harness" / "text-turn")
    assert replayed(scenario, wire=False).divergence is None
    divergence = replayed(scenario, wire=True).divergence
    assert divergence is not None
    assert "the adapter sent no request to the provider" in divergence
    assert "RuntimeError: not implemented" in divergence
    assert running == []  # the failed replay stopped its server


# -- recorded failures, served as the provider sends them --------------------------------------------------


def _with_override(tmp_path: Path, override: dict[str, Any]) -> Scenario:
    directory = tmp_path / "scenario"
    shutil.copytree(FIXTURES / "harness" / "empty-response-retry", directory)
    shutil.rmtree(directory / "__snapshots__")
    (directory / "override.json").write_text(json.dumps({"overrides": [override]}))
    return load_scenario(directory)


def _retried(result: Rerun) -> list[dict[str, Any]]:
    return [msgspec.json.decode(e.data) for e in result.events if e.type == "llm/retry"]


def test_a_recorded_429_is_served_as_http_429_and_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statuses: list[int] = []
    answer = failure_from_response

    def spy(**kwargs: Any) -> Any:
        statuses.append(kwargs["status"])
        return answer(**kwargs)

    monkeypatch.setattr(f"{ADAPTER}.failure_from_response", spy)
    throw = {
        "op": "throw",
        "turn": 1,
        "step": 1,
        "code": "RATE_LIMIT",
        "message": "Rate limit reached",
        "chunks": [],
    }
    scenario = _with_override(tmp_path, throw)
    chunks, wire = replayed(scenario, wire=False), replayed(scenario, wire=True)
    assert statuses == [429]  # only the wire replay's adapter read an HTTP answer
    assert wire.divergence == chunks.divergence
    assert goldens(wire) == goldens(chunks)
    assert [r["failure"]["code"] for r in _retried(wire)] == ["RATE_LIMIT"]
    assert wire.text == "Recovered."


def test_a_recorded_mid_stream_error_is_served_in_the_stream_and_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    errors: list[Any] = []
    mapped = failure_from_stream_error

    def spy(error: Any, **kwargs: Any) -> Any:
        errors.append(error)
        return mapped(error, **kwargs)

    monkeypatch.setattr("dsh.plugins.llm_openai._mapping.failure_from_stream_error", spy)
    failure = {"message": "upstream overloaded", "code": "SERVER"}
    partial = [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "Part"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Part"}},
        {"type": "finish", "reason": {"kind": "error", "failure": failure}},
    ]
    scenario = _with_override(tmp_path, {"op": "replace", "turn": 1, "step": 1, "chunks": partial})
    chunks, wire = replayed(scenario, wire=False), replayed(scenario, wire=True)
    assert [e["message"] for e in errors] == ["upstream overloaded"]
    assert wire.divergence == chunks.divergence
    assert goldens(wire) == goldens(chunks)
    assert [r["failure"]["code"] for r in _retried(wire)] == ["SERVER"]
    assert wire.text == "Recovered."


# -- stale recordings ---------------------------------------------------------------------------------------


def _without_plugin(tmp_path: Path, use: str) -> Path:
    """replay's default deployment without the plugin entry that `use`s `use`."""
    lines = DEFAULT_DEPLOYMENT.read_text().splitlines()
    out: list[str] = []
    skipping = False
    for line in lines:
        if line.startswith("  - id:"):
            skipping = False
        if line.strip() == f"use: {use}":
            skipping = True
            out.pop()  # its `- id:` line
            continue
        if not skipping:
            out.append(line)
    path = tmp_path / "deployment.yml"
    path.write_text("\n".join(out) + "\n")
    return path


@pytest.mark.parametrize("wire", [False, True], ids=["chunks", "wire"])
def test_a_recording_calling_a_tool_the_deployment_no_longer_offers_fails_naming_it(
    tmp_path: Path, wire: bool
) -> None:
    scenario = load_scenario(FIXTURES / "harness" / "bash-tool-turn")
    deployment = _without_plugin(tmp_path, "tool_bash")
    assert "tool_bash" not in deployment.read_text()
    gone = Scenario(
        scenario.name,
        scenario.log,
        scenario.directory,
        msgspec.structs.replace(scenario.doc, deployment=str(deployment)),
    )
    divergence = replayed(gone, wire=wire).divergence
    assert divergence is not None
    assert divergence.startswith("the recording calls bash (called at (1,1,1)")
    assert "which the deployment no longer offers" in divergence


def test_a_tool_the_recording_never_saw_is_named(tmp_path: Path) -> None:
    directory = tmp_path / "fs-tools"
    shutil.copytree(FIXTURES / "authored" / "fs-tools", directory)
    log = directory / "session.jsonl"
    lines = []
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "request/header":
            tools = event["data"]["header"]["tools"]
            event["data"]["header"]["tools"] = [t for t in tools if t["name"] != "todo_write"]
            line = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
        lines.append(line)
    log.write_text("\n".join(lines) + "\n")
    result = replayed(load_scenario(directory), wire=False)
    assert result.divergence is None
    assert result.unseen_tools == ("todo_write",)
    assert replayed(load_scenario(FIXTURES / "authored" / "fs-tools"), wire=False).unseen_tools == ()


# -- the server's checks, and its lifetime ----------------------------------------------------------------


def _request(**config: Any) -> LlmRequest:
    tool = ToolSchema(name="bash", description="run", parameters={"type": "object"})
    return LlmRequest(
        provider="p", model="m", messages=(), system="be brief", tools=(tool,), config=CallConfig(**config)
    )


def _body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
    }
    return body | changes


def test_the_request_checks_name_what_differs() -> None:
    assert request_problems(_body(), _request(), ["bash"]) == []
    assert request_problems(_body(model="x"), _request(), []) == [
        "model is 'x' where the agent asked for 'm'"
    ]
    assert request_problems(_body(), _request(temperature=0.5), []) == [
        "temperature is None where the agent asked for 0.5"
    ]
    assert "does not offer read, which the recording calls at this step" in request_problems(
        _body(), _request(), ["read"]
    )
    orphan = _body(
        messages=[{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c1", "content": ""}]
    )
    assert request_problems(orphan, _request(), []) == [
        "message 1 (tool): answers tool call 'c1', which no preceding assistant message left open"
    ]
    unanswered = _body(
        messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
            {"role": "user", "content": "again"},
        ]
    )
    assert request_problems(unanswered, _request(), []) == [
        "message 2 (user): comes before tool call(s) c1 were answered"
    ]


def test_the_server_listens_on_loopback_and_stops() -> None:
    server = WireServer().start()
    assert server.url.startswith("http://127.0.0.1:")
    server.stop()
    port = int(server.url.rsplit(":", 1)[1])
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)


def test_a_refused_request_ends_a_recorded_hang_as_a_divergence(monkeypatch: pytest.MonkeyPatch) -> None:
    def renamed(request: LlmRequest) -> dict[str, Any]:
        return build_body(request) | {"model": "another-model"}

    monkeypatch.setattr(f"{ADAPTER}.build_body", renamed)
    scenario = load_scenario(FIXTURES / "harness" / "cancel")
    assert replayed(scenario, wire=False).divergence is None
    divergence = replayed(scenario, wire=True).divergence
    assert divergence is not None
    assert "model is 'another-model' where the agent asked for" in divergence


def test_dsh_replay_wire_runs_the_real_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from dsh.replay import replay_app

    scenario = str(FIXTURES / "harness" / "tool-call-turn")
    runner = CliRunner()
    matched = runner.invoke(replay_app, ["run", scenario, "--wire", "--quiet"], catch_exceptions=False)
    assert matched.exit_code == 0, matched.output
    assert "matches the recording" in matched.output

    async def stub(self: Any, request: LlmRequest) -> Any:
        raise RuntimeError("stub")
        yield

    monkeypatch.setattr(openai_adapter.OpenAICompatibleAdapter, "stream", stub)
    assert runner.invoke(replay_app, ["run", scenario, "--quiet"], catch_exceptions=False).exit_code == 0
    diverged = runner.invoke(replay_app, ["run", scenario, "--wire", "--quiet"], catch_exceptions=False)
    assert diverged.exit_code == 1
    assert "wire call (1,1,1)" in diverged.output
