"""The mcp plugin against real MCP servers, through the agent loop: mcp-server-time over stdio, and the test server
(server.py) over streamable HTTP and stdio: tools listed with the server's own schema, text, image, structured and
error results as logged, a hung call timed out and a cancelled turn cancelling the request, a crashed server named
in the error and started again, list_changed, refused name collisions, and the environment policy."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from dsh.plugins import subagent, tool_subagent
from dsh.plugins.mcp import MCP, MCP_SERVER_FAILED, MCP_TOOL_ERROR, tool_name
from dsh.runtime.agent import AGENTS, Agent
from dsh.runtime.llm import LlmRequest, StreamChunk
from dsh.runtime.session import STORE
from dsh.runtime.tools import TOOLS
from tests.plugins.subagent.harness import by_spawning_call
from tests.runtime.agent.harness import ScriptedAdapter, calls, echo_tool, text

from .harness import (
    STDIO,
    Logged,
    arguments,
    http_server,
    logged,
    mcp_host,
    options,
    results,
    time_server,
    tool_names,
    until,
)


@pytest.mark.anyio
async def test_mcp_server_time_over_stdio_is_called_by_the_model(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(
        [
            calls(("c1", "mcp__time__get_current_time", arguments(timezone="Europe/Oslo"))),
            text("done"),
        ]
    )
    with mcp_host(tmp_path, adapter, {"servers": {"time": {"command": time_server()}}}) as ctx:
        async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
            with anyio.fail_after(120):
                await agent.run("what time is it in Oslo?")
            status = ctx.get(MCP).status(agent.id)["time"]
            assert status.connected
            [result] = results(agent)
    tools = {tool.name: tool for tool in adapter.requests[0].tools}
    assert "mcp__time__get_current_time" in tools
    assert "mcp__time__convert_time" in tools
    # the server's own description and schema, as it sent them
    assert "timezone" in tools["mcp__time__get_current_time"].parameters["properties"]
    assert "time" in tools["mcp__time__get_current_time"].description.lower()
    assert not result.is_error, result.text
    assert "Europe/Oslo" in result.text
    assert "datetime" in result.text
    assert result.meta["mcpServer"] == "time"
    assert result.meta["mcpTool"] == "get_current_time"
    assert status.starts == 1


@pytest.mark.anyio
async def test_http_server_text_image_structured_and_error_results(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(
        [
            calls(
                ("c1", "mcp__web__echo", arguments(text="hi")),
                ("c2", "mcp__web__image", arguments()),
                ("c3", "mcp__web__weather", arguments(city="Oslo")),
                ("c4", "mcp__web__fail", arguments(message="the disk is full")),
            ),
            text("done"),
        ]
    )
    with http_server(tmp_path) as server:
        config = {"servers": {"web": {"type": "http", "url": server.url}}}
        with mcp_host(tmp_path, adapter, config) as ctx:
            async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
                with anyio.fail_after(120):
                    await agent.run("go")
                echo, image, weather, fail = results(agent)
    assert echo == Logged("echo: hi", (), False, None, echo.meta)
    assert image.images
    assert image.images[0].mime_type == "image/png"
    assert image.images[0].data
    assert weather.meta["structuredContent"] == {"city": "Oslo", "celsius": 21}
    assert '"celsius": 21' in weather.text
    assert fail.is_error
    assert fail.code == MCP_TOOL_ERROR
    assert "the disk is full" in fail.text


@pytest.mark.anyio
async def test_a_hung_call_times_out_naming_the_server_and_a_cancelled_turn_cancels_the_request(
    tmp_path: Path,
) -> None:
    adapter = ScriptedAdapter(
        [
            calls(("c1", "mcp__web__hang", arguments(marker="turn-1"))),
            text("timed out"),
            calls(("c2", "mcp__web__hang", arguments(marker="turn-2"))),
        ]
    )
    with http_server(tmp_path) as server:
        config = {"servers": {"web": {"type": "http", "url": server.url}}, "call_timeout_s": 3}
        with mcp_host(tmp_path, adapter, config) as ctx:
            async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
                with anyio.fail_after(120):
                    await agent.run("first")
                    await until(logged(server.log, "cancelled turn-1"))  # the timeout cancelled the request
                    async with anyio.create_task_group() as group:
                        group.start_soon(agent.run, "second")
                        await until(logged(server.log, "started turn-2"))
                        group.cancel_scope.cancel()
                    await until(logged(server.log, "cancelled turn-2"))  # so did the cancelled turn
                timed_out, aborted = results(agent)
    assert timed_out.is_error
    assert timed_out.code == MCP_SERVER_FAILED
    assert 'MCP server "web" did not answer within 3s' in timed_out.text
    assert aborted.code == "ABORTED"


@pytest.mark.anyio
async def test_a_crashed_stdio_server_is_named_and_started_again(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(
        [
            calls(("c1", "mcp__box__crash", arguments())),
            text("it crashed"),
            calls(("c2", "mcp__box__echo", arguments(text="back"))),
            text("ok"),
        ]
    )
    config = {"servers": {"box": STDIO}, "restart_backoff_s": 0.1}
    with mcp_host(tmp_path, adapter, config) as ctx:
        async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
            with anyio.fail_after(120):
                await agent.run("crash it")
                status = ctx.get(MCP).status(agent.id)["box"]
                await until(lambda: status.connected and status.starts == 2)
                await agent.run("again")
            crashed, echoed = results(agent)
    assert crashed.is_error
    assert crashed.code == MCP_SERVER_FAILED
    assert 'MCP server "box"' in crashed.text
    assert "crashing on purpose" in crashed.text
    assert echoed.text == "echo: back"
    assert not echoed.is_error


@pytest.mark.anyio
async def test_list_changed_registers_the_new_tool(tmp_path: Path) -> None:
    holder: list[Agent] = []

    async def call_the_new_tool(request: LlmRequest) -> AsyncIterator[StreamChunk]:
        tools = holder[0].ctx.get(TOOLS)
        # the re-listing runs beside the turn, prompted by the server's notification
        with anyio.fail_after(30):
            await until(lambda: tools.get("mcp__box__late") is not None)
        for chunk in calls(("c2", "mcp__box__late", arguments(text="x"))):
            yield chunk

    adapter = ScriptedAdapter(
        [calls(("c1", "mcp__box__add_tool", arguments(name="late"))), call_the_new_tool, text("done")]
    )
    with mcp_host(tmp_path, adapter, {"servers": {"box": STDIO}}) as ctx:
        async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
            holder.append(agent)
            with anyio.fail_after(120):
                await agent.run("add a tool")
            added, late = results(agent)
    assert added.text == "added late"
    assert late.text == "late: x"
    assert "mcp__box__late" not in tool_names(adapter, 0)
    assert "mcp__box__late" in tool_names(adapter, 2)


@pytest.mark.anyio
async def test_tools_leave_with_the_session(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([text("hello")])
    with mcp_host(tmp_path, adapter, {"servers": {"box": STDIO}}) as ctx:
        async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
            with anyio.fail_after(120):
                await agent.run("hi")
            assert agent.ctx.get(TOOLS).get("mcp__box__echo") is not None
            assert ctx.get(TOOLS).get("mcp__box__echo") is None  # the session's own, not the host's
        assert ctx.get(MCP).status(agent.id) == {}
    assert "mcp__box__echo" in tool_names(adapter, 0)


@pytest.mark.anyio
async def test_a_tool_name_taken_by_a_dsh_tool_is_refused_clearly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = ScriptedAdapter([text("hello")])
    with mcp_host(tmp_path, adapter, {"servers": {"box": STDIO}}) as ctx:
        ctx.get(TOOLS).register(echo_tool(tool_name("box", "echo")))
        async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
            with anyio.fail_after(120), caplog.at_level(logging.ERROR, logger="dsh.mcp"):
                await agent.run("hi")
            status = ctx.get(MCP).status(agent.id)["box"]
            kept = agent.ctx.get(TOOLS).get("mcp__box__echo")
    assert status.refused == ["mcp__box__echo"]
    assert kept is not None
    assert kept.description == "Echo `text` back."
    assert kept.hermetic  # dsh's own stays
    assert "mcp__box__image" in status.tools
    assert (
        'MCP server "box": tool "echo" is not registered: its name mcp__box__echo is taken by a tool dsh'
        in (caplog.text)
    )


@pytest.mark.anyio
async def test_stdio_servers_get_the_tool_environment_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PROVIDER_API_KEY", "sk-not-for-servers-1234")
    monkeypatch.setenv("PLAIN_SETTING", "1")
    monkeypatch.setenv("GRANTED_TOKEN", "granted-value-5678")
    ask = arguments(names=["FAKE_PROVIDER_API_KEY", "PLAIN_SETTING", "GRANTED_TOKEN"])
    adapter = ScriptedAdapter(
        [calls(("c1", "mcp__a__report_env", ask), ("c2", "mcp__b__report_env", ask)), text("ok")]
    )
    granted = {**STDIO, "env": {"GRANTED_TOKEN": "${GRANTED_TOKEN}"}}
    with mcp_host(tmp_path, adapter, {"servers": {"a": STDIO, "b": granted}}) as ctx:
        async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
            with anyio.fail_after(120):
                await agent.run("env?")
            plain, with_grant = results(agent)
    assert plain.text == "FAKE_PROVIDER_API_KEY=unset, PLAIN_SETTING=set, GRANTED_TOKEN=unset"
    assert with_grant.text == "FAKE_PROVIDER_API_KEY=unset, PLAIN_SETTING=set, GRANTED_TOKEN=set"


@pytest.mark.anyio
async def test_a_server_that_cannot_start_is_reported_and_the_turn_goes_on(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([calls(("c1", "mcp__gone__x", arguments())), text("ok")])
    config = {"servers": {"gone": {"command": str(tmp_path / "no-such-server")}}, "connect_timeout_s": 10}
    with mcp_host(tmp_path, adapter, config) as ctx:
        async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
            with anyio.fail_after(120):
                await agent.run("hi")
            status = ctx.get(MCP).status(agent.id)["gone"]
            [result] = results(agent)
    assert not status.connected
    assert status.failure is not None
    assert result.code == "UNKNOWN_TOOL"


@pytest.mark.anyio
async def test_project_mcp_json_is_read_when_allowed(tmp_path: Path) -> None:
    workspace = options(tmp_path).cwd
    assert workspace is not None
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": STDIO}}))
    for allowed in (True, False):
        adapter = ScriptedAdapter([text("hello")])
        with mcp_host(tmp_path / str(allowed), adapter, {"project_config": allowed}) as ctx:
            async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
                with anyio.fail_after(120):
                    await agent.run("hi")
        assert ("mcp__proj__echo" in tool_names(adapter, 0)) is allowed


def test_a_stdio_server_dies_with_dsh_even_by_sigkill(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    root = Path(__file__).parents[3]
    env = os.environ | {"MCP_TEST_LOG": str(log), "MCP_TEST_CHILD": "1", "PYTHONPATH": str(root)}
    with subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("hold.py")), str(tmp_path)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as dsh:
        try:
            assert dsh.stdout is not None
            assert dsh.stdout.readline() == b"ready\n"
            noted = dict(line.split() for line in log.read_text().splitlines())
            server, child = int(noted["pid"]), int(noted["child"])
            assert _alive(server)
            assert _alive(child)
            dsh.kill()
            dsh.wait(30)
            deadline = time.monotonic() + 30
            # the server would exit at the end of its stdin anyway; what it started would not, but for the guard
            while _alive(server) or _alive(child):
                assert time.monotonic() < deadline, (
                    f"the MCP server {server} or its child {child} outlived dsh"
                )
                time.sleep(0.05)
        finally:
            dsh.kill()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has died; only its parent's reaping is left


@pytest.mark.anyio
async def test_a_subagent_calls_its_sessions_servers_and_lazy_start_does_not_hold_the_turn(
    tmp_path: Path,
) -> None:
    spawn = arguments(description="Echo", prompt="echo 'from the child'")
    adapter = ScriptedAdapter(
        scripts={
            "parent": [text("hello"), calls(("p1", "subagent", spawn)), text("the child answered")],
            "p1": [calls(("k1", "mcp__box__echo", arguments(text="from the child"))), text("echoed")],
        }
    )
    with mcp_host(tmp_path, adapter, {"servers": {"box": STDIO}, "start": "lazy"}) as ctx:
        ctx.plugin(subagent.plugin, {"max_depth": 2})
        ctx.plugin(subagent.spawn_plugin)
        ctx.plugin(tool_subagent.plugin, {"provider": "spawn"}, id="tool-subagent")
        adapter.key = by_spawning_call(ctx.get(STORE))
        async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
            with anyio.fail_after(120):
                await agent.run("hello")  # lazy: the turn does not wait for the server
                status = ctx.get(MCP).status(agent.id)["box"]
                await until(lambda: status.connected)
                await agent.run("delegate")
            child = next(info for info in ctx.get(STORE).sessions() if info.parent_id == agent.id)
            [echoed] = results(agent, child.id)
    assert echoed.text == "echo: from the child"
    assert status.starts == 1  # one server for the session and its subagent
