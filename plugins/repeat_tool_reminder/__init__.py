"""The `repeat_tool_reminder` plugin: a reminder when the model repeats one tool call with identical arguments."""

from ._plugin import GENTLE as GENTLE
from ._plugin import PLUGIN as PLUGIN
from ._plugin import Config as Config
from ._plugin import RepeatReminder as RepeatReminder
from ._plugin import canonical as canonical
from ._plugin import detailed as detailed
from ._plugin import plugin as plugin
from ._plugin import source as source

__all__ = ["GENTLE", "PLUGIN", "Config", "RepeatReminder", "canonical", "detailed", "plugin", "source"]
