"""The ACP agent server: `dsh acp` serves a deployment's agents to editors over the Agent Client Protocol."""

from ._command import acp_command as command
from ._command import serve as serve
from ._server import AcpServer as AcpServer
from ._server import stop_reason as stop_reason
from ._transport import LineTransport as LineTransport
from ._transport import invalid_reason as invalid_reason
from ._updates import SessionUpdates as SessionUpdates
from ._updates import tool_kind as tool_kind
from ._updates import tool_title as tool_title

__all__ = [
    "AcpServer",
    "LineTransport",
    "SessionUpdates",
    "command",
    "invalid_reason",
    "serve",
    "stop_reason",
    "tool_kind",
    "tool_title",
]
