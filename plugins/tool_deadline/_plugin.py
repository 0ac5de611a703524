"""The `tool_deadline` plugin: a deadline per tool call (the original's timeout policy). A call still running when
its tool's deadline passes is cancelled, and the model is told so in a result that says which budget ran out, with
the code `TOOL_TIMEOUT` a retry or a reader can route on."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from dsh.runtime.kernel import Context, Next, Plugin
from dsh.runtime.llm import ToolCallBlock
from dsh.runtime.tools import EXECUTOR, Tool, ToolContext, ToolResult
from dsh.runtime.tools.definition import Execute

__all__ = ["TOOL_TIMEOUT", "Config", "plugin", "timed_out"]

TOOL_TIMEOUT = "TOOL_TIMEOUT"


def timed_out(ms: int) -> ToolResult:
    """The result of a call its deadline ended, worded as the original's."""
    return ToolResult.error(TOOL_TIMEOUT, f"Error: tool call timed out after {ms}ms")


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`deadlines_ms`: per tool name, how long one call may run; `default_ms`: for a tool not named (None: no
    deadline). A tool that keeps its own timeout (bash's `timeout` argument) still has it: whichever ends first."""

    deadlines_ms: dict[str, int] = msgspec.field(default_factory=dict)
    default_ms: int | None = None

    def __post_init__(self) -> None:
        bad = {name: ms for name, ms in self.deadlines_ms.items() if ms < 1}
        if bad or (self.default_ms is not None and self.default_ms < 1):
            raise ValueError(
                f"tool_deadline: a deadline must be at least 1 ms, got {bad or {'default_ms': self.default_ms}}"
            )

    def deadline(self, tool: str) -> int | None:
        return self.deadlines_ms.get(tool, self.default_ms)


def _apply(ctx: Context, config: Config) -> None:
    async def executor(
        execute: Execute, tool: Tool, call: ToolCallBlock, context: ToolContext, next_: Next[Any]
    ) -> Any:
        chosen: Execute = await next_(execute)
        ms = config.deadline(tool.name)
        if ms is None:
            return chosen

        async def bounded(arguments: dict[str, Any], context: ToolContext) -> ToolResult | str:
            with anyio.move_on_after(ms / 1000) as scope:
                return await chosen(arguments, context)
            assert scope.cancelled_caught
            return timed_out(ms)

        return bounded

    ctx.on(EXECUTOR, executor)


plugin = Plugin(
    name="tool_deadline",
    apply=_apply,
    config=Config,
    description="ends a tool call that overruns its deadline with a TOOL_TIMEOUT result",
)
