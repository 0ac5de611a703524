"""The mcp plugin's config, naming and result mapping, without a server: server specs in the `.mcp.json` shape,
`${NAME}` references (an unset one is named, a value never shown), the project file, tool names, and how each kind
of MCP content reaches the model; and a secret in a header never reaching a failure or a log line."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import mcp_types
import pytest

from dsh.plugins.mcp import MCP, HttpServer, StdioServer, map_result, parse_servers, plugin, tool_name
from dsh.plugins.mcp._config import expand, read_project_servers
from dsh.runtime.agent import AGENTS
from dsh.runtime.kernel import ConfigError
from dsh.runtime.tools.definition import TOOL_NAME
from tests.runtime.agent.harness import ScriptedAdapter, host, text

from .harness import free_port, options


def test_tool_names_are_the_originals_and_always_valid() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    dotted = tool_name("fs", "read.file")
    long = tool_name("server", "x" * 80)
    assert dotted.startswith("mcp__fs__read_file_")
    assert dotted != tool_name("fs", "read_file")  # a replaced character never makes two tools one
    for name in (dotted, long):
        assert TOOL_NAME.fullmatch(name), name
    assert tool_name("server", "x" * 80) != tool_name("server", "x" * 81)


def test_server_specs_take_the_mcp_json_shape() -> None:
    specs = parse_servers(
        {
            "a": {"command": "srv", "args": ["--flag"], "env": {"K": "v"}, "cwd": "sub"},
            "b": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X": "y"}},
            "c": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
            "d": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"},
        },
        where="servers",
    )
    assert specs["a"] == StdioServer(command="srv", args=("--flag",), env={"K": "v"}, cwd="sub")
    assert specs["b"] == HttpServer(type="http", url="http://127.0.0.1:1/mcp", headers={"X": "y"})
    assert isinstance(specs["c"], HttpServer)
    assert specs["c"].type == "sse"
    assert isinstance(specs["d"], HttpServer)
    assert specs["d"].type == "http"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"bad name": {"command": "x"}}, 'server name "bad name" is invalid'),
        (
            {"a": {"type": "ws", "url": "x"}},
            'servers.a: unknown type "ws"; valid: stdio (the default), http, sse',
        ),
        ({"a": {"command": "x", "comand": "y"}}, "servers.a: Object contains unknown field `comand`"),
        ({"a": {"type": "http"}}, "servers.a: Object missing required field `url`"),
    ],
)
def test_bad_server_entries_are_named(entries: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match="servers") as caught:
        parse_servers(entries, where="servers")
    assert message in str(caught.value)


def test_a_bad_entry_fails_the_plugin_load(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter()) as ctx, pytest.raises(ConfigError) as caught:
        ctx.plugin(plugin, {"servers": {"a": {"type": "ws", "url": "x"}}}, id="mcp")
    assert "mcp" in str(caught.value)
    assert 'unknown type "ws"' in str(caught.value)


def test_references_come_from_the_environment_and_an_unset_one_is_named_not_shown() -> None:
    environ = {"TOKEN": "s3cret-value"}
    assert expand("Bearer ${TOKEN}", environ, where="x") == "Bearer s3cret-value"
    assert expand("${MISSING:-fallback}", environ, where="x") == "fallback"
    with pytest.raises(ConfigError) as caught:
        expand("${MISSING} ${TOKEN}", environ, where='MCP server "api".headers.Authorization')
    assert 'MCP server "api".headers.Authorization: ${MISSING} is not set' in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_the_project_file_is_read_and_a_malformed_one_is_named(tmp_path: Path) -> None:
    assert read_project_servers(tmp_path) == {}
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"t": {"command": "mcp-server-time"}}}')
    assert read_project_servers(tmp_path) == {"t": StdioServer(command="mcp-server-time")}
    (tmp_path / ".mcp.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"\.mcp\.json: not a readable JSON file"):
        read_project_servers(tmp_path)


def test_every_kind_of_content_reaches_the_model() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(type="text", text="first"),
            mcp_types.AudioContent(type="audio", data="QUJD", mime_type="audio/wav"),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="inside"),
            ),
            mcp_types.ResourceLink(type="resource_link", uri="file:///b.txt", name="b"),
        ],
        is_error=True,
    )
    mapped = map_result(result, server="s", tool="t")
    assert mapped.text == (
        "first\n[audio audio/wav: 4 base64 chars, not shown]\n[resource file:///a.txt]\ninside\n"
        "[resource link file:///b.txt (b)]"
    )
    assert mapped.is_error
    assert mapped.code == "MCP_TOOL_ERROR"
    assert mapped.meta == {"mcpServer": "s", "mcpTool": "t"}


@pytest.mark.anyio
async def test_a_secret_header_never_reaches_a_failure_or_a_log_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MCP_TEST_SECRET", "very-secret-header-value")
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
    server = {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${MCP_TEST_SECRET}"}}
    adapter = ScriptedAdapter([text("hi")])
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(plugin, {"servers": {"api": server}, "connect_timeout_s": 10})
        async with ctx.get(AGENTS).create(options(tmp_path)) as agent:
            with anyio.fail_after(30), caplog.at_level(logging.DEBUG):
                await agent.run("hi")
            status = ctx.get(MCP).status(agent.id)["api"]
            assert not status.connected
            failure = status.failure
    assert failure is not None
    assert "very-secret" not in failure
    assert "very-secret" not in caplog.text
    assert 'MCP server "api"' in caplog.text
