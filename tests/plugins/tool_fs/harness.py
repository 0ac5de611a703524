"""The file tools loaded in a workspace: calls go through the real registry pipeline (parse, validate, execute)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.plugins.tool_fs import plugin as fs_plugin
from dsh.runtime.kernel import Context
from dsh.runtime.llm import CallId, ToolCallBlock
from dsh.runtime.tools import TOOLS, ToolContext, ToolResult

from ..tool_host import tool_host


@dataclass
class Fs:
    """The tools of one loaded `tool_fs`, called in the workspace `root`."""

    ctx: Context
    root: Path

    async def call(self, tool: str, **arguments: Any) -> ToolResult:
        call = ToolCallBlock(CallId("call_1"), tool, json.dumps(arguments))
        return await self.ctx.get(TOOLS).execute(
            call, ToolContext(ctx=self.ctx, cwd=self.root, call_id="call_1")
        )

    def write(self, relative: str, content: str | bytes) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_bytes(content.encode())
        else:
            path.write_bytes(content)
        return path


def load(root: Path, config: Mapping[str, Any] | None = None) -> Fs:
    ctx = tool_host()
    ctx.plugin(fs_plugin, config)
    return Fs(ctx, root)
