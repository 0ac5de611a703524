"""The bash tool run for real: output and markers, truncation, timeouts and cancellation killing the whole
process group, and the plugin's registration."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import anyio
import pytest

from dsh.plugins.tool_bash import SECTION, BashConfig, plugin
from dsh.runtime.kernel import ConfigError, Context, MissingServiceError
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.tools import TOOLS, ToolContext, ToolResult
from dsh.runtime.tools import plugin as tools_plugin

from ..tool_host import model_view, registries, text, tool_host


def host(config: dict[str, int] | None = None) -> Context:
    ctx = tool_host()
    ctx.plugin(plugin, config)
    return ctx


async def bash(ctx: Context, cwd: Path, command: str, **extra: object) -> ToolResult:
    arguments = json.dumps({"command": command, "description": "Run a test command", **extra})
    return await ctx.get(TOOLS).execute(
        ToolCallBlock(CallId("c1"), "bash", arguments), ToolContext(ctx, cwd, "c1")
    )


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for a reaper."""
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_for_pid(path: Path) -> int:
    for _ in range(200):
        text = await anyio.Path(path).read_text() if await anyio.Path(path).exists() else ""
        if text.strip():
            return int(text)
        await anyio.sleep(0.01)
    raise AssertionError("the child never wrote its pid")


async def assert_dies(pid: int) -> None:
    for _ in range(200):
        if not alive(pid):
            return
        await anyio.sleep(0.01)
    raise AssertionError(f"process {pid} outlived the call")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo TERMINAL_OK", "TERMINAL_OK\n"),
        ("true", "(no output)"),
        ("echo out; echo err >&2", "out\n[stderr]\nerr\n"),
        ("printf partial; exit 3", "partial\n[exit code: 3]"),
        ("echo oops >&2; exit 1", "[stderr]\noops\n[exit code: 1]"),
        ("kill -TERM $$", "(no output)\n[killed by signal: SIGTERM]"),
        ("pwd", "{cwd}\n"),
    ],
)
async def test_output_and_markers(tmp_path: Path, command: str, expected: str) -> None:
    result = await bash(host(), tmp_path, command)
    assert result.text == expected.format(cwd=tmp_path)
    assert not result.is_error


@pytest.mark.anyio
async def test_workdir_is_resolved_against_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    assert (await bash(host(), tmp_path, "pwd", workdir="sub")).text == f"{tmp_path / 'sub'}\n"
    missing = await bash(host(), tmp_path, "pwd", workdir="nope")
    assert (missing.is_error, missing.code) == (True, "WORKDIR_NOT_FOUND")


@pytest.mark.anyio
async def test_long_output_keeps_the_tail_and_says_what_was_cut(tmp_path: Path) -> None:
    result = await bash(host({"output_cap_bytes": 100}), tmp_path, "seq 1 10000")
    first, _, kept = result.text.partition("\n")
    assert first == "[output truncated: the first 48794 of 48894 bytes were dropped]"
    assert kept.endswith("9999\n10000\n")
    assert len(kept) == 100


@pytest.mark.anyio
async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    result = await bash(host(), tmp_path, f"sleep 30 & echo $! > {pid_file}; wait", timeoutMs=300)
    assert time.monotonic() - started < 10
    assert result.text == "(no output)\n[timed out after 300ms]\n[killed by signal: SIGKILL]"
    await assert_dies(int(pid_file.read_text()))


@pytest.mark.anyio
async def test_cancellation_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    ctx = host()
    async with anyio.create_task_group() as group:
        group.start_soon(bash, ctx, tmp_path, f"sleep 30 & echo $! > {pid_file}; wait")
        pid = await wait_for_pid(pid_file)
        group.cancel_scope.cancel()
    await assert_dies(pid)


@pytest.mark.anyio
async def test_a_background_child_holding_the_pipes_is_killed_not_waited_for(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    result = await bash(host(), tmp_path, f"sleep 30 & echo $! > {pid_file}; echo started")
    assert result.text == "started\n"
    assert time.monotonic() - started < 10
    await assert_dies(int(pid_file.read_text()))


@pytest.mark.anyio
async def test_empty_command_is_refused(tmp_path: Path) -> None:
    result = await bash(host(), tmp_path, "")
    assert (result.is_error, result.code) == (True, "INVALID_ARGUMENTS")
    assert "should be non-empty" in result.text


def test_config_is_checked() -> None:
    with pytest.raises(ConfigError, match="must not exceed"):
        host({"timeout_ms": 10, "max_timeout_ms": 5})
    assert BashConfig().timeout_ms == 120_000


def test_loading_registers_the_tool_and_its_section_and_unloading_removes_both() -> None:
    ctx = tool_host()
    before = registries(ctx)
    loaded = ctx.plugin(plugin)
    system, tools = model_view(ctx)
    assert [t["name"] for t in tools] == ["bash"]
    assert text(SECTION) in system
    loaded.unload()
    assert registries(ctx) == before
    system, tools = model_view(ctx)
    assert tools == []
    assert text(SECTION) not in system


def test_the_section_holds_only_the_exit_code_habit() -> None:
    assert (SECTION.name, SECTION.order) == ("tool:bash", 105)
    assert "[exit code: N]" in text(SECTION)
    assert "bash -c" not in text(SECTION)  # what a call does is the description's
    assert "timeout" not in text(SECTION).lower()


def test_needs_the_prompt_and_the_tool_registry() -> None:
    bare = Context()
    bare.plugin(tools_plugin)
    with pytest.raises(MissingServiceError, match='"system-prompt"'):
        bare.plugin(plugin)


def test_loaded_in_an_agent_scope_its_tool_and_section_stay_in_that_scope() -> None:
    ctx = tool_host()
    agent = ctx.scoped("agent:a")
    loaded = agent.plugin(plugin)
    assert model_view(agent)[1][0]["name"] == "bash"
    assert text(SECTION) in model_view(agent)[0]
    assert model_view(ctx)[1] == []
    assert text(SECTION) not in model_view(ctx)[0]
    assert model_view(ctx.scoped("agent:b")) == model_view(ctx)
    loaded.unload()
    assert model_view(agent) == model_view(ctx)
