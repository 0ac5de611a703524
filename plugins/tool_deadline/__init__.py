"""The `tool_deadline` plugin: a per-tool deadline that ends an overrunning call with a clear result."""

from ._plugin import TOOL_TIMEOUT as TOOL_TIMEOUT
from ._plugin import Config as Config
from ._plugin import plugin as plugin
from ._plugin import timed_out as timed_out

__all__ = ["TOOL_TIMEOUT", "Config", "plugin", "timed_out"]
