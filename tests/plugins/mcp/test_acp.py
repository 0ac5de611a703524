"""ACP's `mcpServers`: `dsh acp` with the mcp plugin connects a `session/new`'s stdio server (mcp-server-time) and
http server (the test server on 127.0.0.1) for that session, and the model's calls reach them; `initialize`
offers http and sse."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from acp import PROTOCOL_VERSION, text_block
from acp.schema import HttpMcpServer, McpServerStdio, ToolCallProgress

from tests.plugins.acp.harness import Recorder, dsh_acp
from tests.plugins.llm_openai.loopback import loopback
from tests.runtime.cli.helpers import answer, deployment, tool_call

from .harness import http_server, time_server

pytestmark = pytest.mark.anyio


async def test_session_new_mcp_servers_are_connected_for_the_session(tmp_path: Path) -> None:
    recorder = Recorder()
    replies = (
        tool_call("mcp__clock__get_current_time", {"timezone": "Asia/Tokyo"}, call_id="c1"),
        tool_call("mcp__web__echo", {"text": "over http"}, call_id="c2"),
        answer("both answered"),
    )
    with http_server(tmp_path) as server:
        async with loopback(*replies) as model:
            document = json.loads(deployment(model.base_url))
            document["plugins"].append({"id": "mcp", "use": "mcp", "config": {"connect_timeout_s": 60}})
            config = tmp_path / "deployment.yml"
            config.write_text(json.dumps(document))
            async with dsh_acp(tmp_path, config, recorder) as (conn, _):
                with anyio.fail_after(150):
                    init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
                    session = await conn.new_session(
                        cwd=str(tmp_path),
                        mcp_servers=[
                            McpServerStdio(name="clock", command=time_server(), args=[], env=[]),
                            HttpMcpServer(type="http", name="web", url=server.url, headers=[]),
                        ],
                    )
                    response = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    assert init.agent_capabilities is not None
    assert init.agent_capabilities.mcp_capabilities is not None
    assert init.agent_capabilities.mcp_capabilities.http
    assert response.stop_reason == "end_turn"
    tools = [tool["function"]["name"] for tool in model.requests[0].json()["tools"]]
    assert "mcp__clock__get_current_time" in tools
    assert "mcp__web__echo" in tools
    done = [u for u in recorder.of(session.session_id) if isinstance(u, ToolCallProgress) and u.content]
    texts = [json.dumps(u.model_dump(mode="json")) for u in done]
    assert any("Asia/Tokyo" in text for text in texts), texts
    assert any("echo: over http" in text for text in texts), texts
