"""The `acp` subagent provider: a child agent in an external ACP agent process (e.g. `dsh acp`)."""

from ._provider import AcpConfig as AcpConfig
from ._provider import AcpRun as AcpRun
from ._provider import acp_provider as acp_provider
from ._provider import plugin as plugin
from ._provider import stop_reason as stop_reason

__all__ = ["AcpConfig", "AcpRun", "acp_provider", "plugin", "stop_reason"]
