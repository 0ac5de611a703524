"""The ACP agent server: `dsh acp` serves a deployment's agents to editors over the Agent Client Protocol."""

from ._command import acp_command as command
from ._command import serve as serve
from ._server import AcpServer as AcpServer
from ._server import stop_reason as stop_reason
from ._transport import stdio_streams as stdio_streams
from ._updates import SessionUpdates as SessionUpdates
from ._updates import tool_kind as tool_kind
from ._updates import tool_title as tool_title

__all__ = [
    "AcpServer",
    "SessionUpdates",
    "command",
    "serve",
    "stdio_streams",
    "stop_reason",
    "tool_kind",
    "tool_title",
]
