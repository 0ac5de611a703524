"""MCP tool servers: each tool of a configured server becomes a dsh tool `mcp__<server>__<tool>` for as long as
the server is connected; the servers of a session are processes (or connections) dsh owns."""

from ._config import MCP_JSON as MCP_JSON
from ._config import HttpServer as HttpServer
from ._config import McpConfig as McpConfig
from ._config import ServerSpec as ServerSpec
from ._config import StdioServer as StdioServer
from ._config import parse_servers as parse_servers
from ._link import Connector as Connector
from ._link import Link as Link
from ._link import LinkError as LinkError
from ._link import ListedTool as ListedTool
from ._link import ServerRef as ServerRef
from ._link import live_connector as live_connector
from ._plugin import MCP as MCP
from ._plugin import McpService as McpService
from ._plugin import plugin as plugin
from ._results import MCP_TOOL_ERROR as MCP_TOOL_ERROR
from ._results import map_result as map_result
from ._results import tool_name as tool_name
from ._results import tool_prefix as tool_prefix
from ._servers import CONNECT as CONNECT
from ._servers import MCP_ERROR as MCP_ERROR
from ._servers import MCP_SERVER_FAILED as MCP_SERVER_FAILED
from ._servers import MCP_SERVER_UNAVAILABLE as MCP_SERVER_UNAVAILABLE
from ._servers import ServerStatus as ServerStatus

__all__ = [
    "CONNECT",
    "MCP",
    "MCP_ERROR",
    "MCP_JSON",
    "MCP_SERVER_FAILED",
    "MCP_SERVER_UNAVAILABLE",
    "MCP_TOOL_ERROR",
    "Connector",
    "HttpServer",
    "Link",
    "LinkError",
    "ListedTool",
    "McpConfig",
    "McpService",
    "ServerRef",
    "ServerSpec",
    "ServerStatus",
    "StdioServer",
    "live_connector",
    "map_result",
    "parse_servers",
    "plugin",
    "tool_name",
    "tool_prefix",
]
