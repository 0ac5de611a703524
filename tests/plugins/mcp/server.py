"""A real MCP server for the mcp plugin's tests and benchmark, on the `mcp` SDK's MCPServer (FastMCP in SDK 1):
`python server.py stdio` serves over stdin/stdout, `python server.py http PORT` over streamable HTTP on 127.0.0.1.
Its tools return text, an image, structured content and an error; one hangs until cancelled (it writes
`started <marker>`, then `cancelled <marker>` to the file `$MCP_TEST_LOG` when the client cancels it), one kills the server, one adds a
tool and tells the client its tool list changed. `$MCP_TEST_LOG` also gets `pid <PID>` at start (and `child <PID>`: a `sleep` it starts when `$MCP_TEST_CHILD` is
set)."""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import anyio
import mcp_types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
    )
).decode()

server = MCPServer("dsh-test")


def _note(line: str) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        with open(path, "a") as file:
            file.write(line + "\n")


@server.tool(description="Echo `text` back.")
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="Return a one-pixel PNG.")
def image() -> mcp_types.ImageContent:
    return mcp_types.ImageContent(type="image", data=PNG, mime_type="image/png")


@server.tool(description="Return the weather as structured content.", structured_output=True)
def weather(city: str) -> dict[str, Any]:
    return {"city": city, "celsius": 21}


@server.tool(description="Fail with `message`.")
def fail(message: str) -> str:
    raise ToolError(message)


@server.tool(description="Wait until cancelled.")
async def hang(marker: str) -> str:
    _note(f"started {marker}")
    try:
        await anyio.sleep_forever()
    finally:
        _note(f"cancelled {marker}")  # a plain write: nothing here awaits
    return "unreachable"


@server.tool(description="Kill the server process.")
def crash() -> str:
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(description="Report which of `names` are set in the server's environment.")
def report_env(names: list[str]) -> str:
    return ", ".join(f"{name}={'set' if name in os.environ else 'unset'}" for name in names)


@server.tool(description="Add a tool named `name` and tell the client the tool list changed.")
async def add_tool(name: str, ctx: Context) -> str:
    def added(text: str) -> str:
        return f"{name}: {text}"

    server.add_tool(added, name=name, description=f"A tool added at run time: {name}.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    _note(f"pid {os.getpid()}")
    if os.environ.get("MCP_TEST_CHILD"):  # a process of the server's own, which only dsh's guard would stop
        import subprocess

        _note(f"child {subprocess.Popen(['sleep', '600']).pid}")
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
