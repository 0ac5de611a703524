"""A call that overruns its tool's deadline ends with the original's TOOL_TIMEOUT result; a call within it, or of a
tool with no deadline, returns what the tool said. Each call is held on an event, never on the clock, except the one
the deadline ends (it would wait forever)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from dsh.plugins.tool_deadline import TOOL_TIMEOUT, Config
from dsh.plugins.tool_deadline import plugin as deadline_plugin
from dsh.runtime.kernel import Context
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.tools import TOOLS, Tool, ToolContext, ToolResult

from ..tool_host import tool_host


async def _forever(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    await anyio.Event().wait()  # never set: only a cancellation ends it
    raise AssertionError("unreachable")


async def _quick(arguments: dict[str, Any], context: ToolContext) -> str:
    return "done"


def _host(config: Config) -> Context:
    ctx = tool_host()
    tools = ctx.get(TOOLS)
    params = {"type": "object", "properties": {}}
    tools.register(Tool(name="stuck", description="never returns", parameters=params, execute=_forever))
    tools.register(Tool(name="quick", description="returns at once", parameters=params, execute=_quick))
    ctx.plugin(deadline_plugin, config)
    return ctx


def _run(ctx: Context, name: str) -> ToolResult:
    async def go() -> ToolResult:
        with anyio.fail_after(30):  # a hang is a failure, not a stuck suite
            return await ctx.get(TOOLS).execute(
                ToolCallBlock(CallId("c1"), name, "{}"), ToolContext(ctx=ctx, cwd=Path("/"), call_id="c1")
            )

    return anyio.run(go)


def test_an_overrunning_call_ends_with_a_clear_timeout_result() -> None:
    result = _run(_host(Config(deadlines_ms={"stuck": 50})), "stuck")
    assert result.is_error
    assert result.code == TOOL_TIMEOUT
    assert result.text == "Error: tool call timed out after 50ms"


def test_a_call_within_its_deadline_and_an_unnamed_tool_are_untouched() -> None:
    ctx = _host(Config(deadlines_ms={"stuck": 50}))
    assert _run(ctx, "quick").text == "done"
    assert _run(_host(Config(default_ms=60_000)), "quick").text == "done"


def test_a_deadline_below_one_ms_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 ms"):
        Config(deadlines_ms={"bash": 0})
