"""The `repeat_tool_reminder` plugin: a reminder when the model repeats one tool call with identical arguments."""

from ._plugin import GENTLE as GENTLE
from ._plugin import SOURCE as SOURCE
from ._plugin import Config as Config
from ._plugin import RepeatReminder as RepeatReminder
from ._plugin import canonical as canonical
from ._plugin import detailed as detailed
from ._plugin import plugin as plugin

__all__ = ["GENTLE", "SOURCE", "Config", "RepeatReminder", "canonical", "detailed", "plugin"]
