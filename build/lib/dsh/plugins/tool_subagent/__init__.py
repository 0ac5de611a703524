"""The `subagent` / `subagent_fork` tools: one tool per configured subagent provider, worded from it."""

from ._plugin import CONTINUABLE_ORDER as CONTINUABLE_ORDER
from ._plugin import ToolSubagentConfig as ToolSubagentConfig
from ._plugin import continuable_section as continuable_section
from ._plugin import default_tool_name as default_tool_name
from ._plugin import plugin as plugin
from ._plugin import render_result as render_result
from ._plugin import subagent_tool as subagent_tool
from ._wording import LABEL_DESCRIPTION as LABEL_DESCRIPTION
from ._wording import Wording as Wording
from ._wording import parameters as parameters
from ._wording import wording as wording

__all__ = [
    "CONTINUABLE_ORDER",
    "LABEL_DESCRIPTION",
    "ToolSubagentConfig",
    "Wording",
    "continuable_section",
    "default_tool_name",
    "parameters",
    "plugin",
    "render_result",
    "subagent_tool",
    "wording",
]
