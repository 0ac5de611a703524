"""A dsh host that starts the test server (stdio) for one session, prints `ready`, and waits to be killed: for the
test that a stdio server dies with dsh. Run as `python hold.py WORKDIR` from the repository root."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from dsh.plugins import mcp
from dsh.runtime.agent import AGENTS
from tests.plugins.mcp.harness import STDIO, options
from tests.runtime.agent.harness import ScriptedAdapter, host


async def main(work: Path) -> None:
    with host(work, ScriptedAdapter()) as ctx:
        ctx.plugin(mcp.plugin, {"servers": {"box": STDIO}, "connect_timeout_s": 60})
        async with ctx.get(AGENTS).create(options(work)) as agent:
            await ctx.get(mcp.MCP).connect(agent)
            print("ready", flush=True)
            await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]))
