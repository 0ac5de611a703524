"""The `todo_write` tool plugin: the agent's plan as a list it replaces whole, logged as `todo/write`."""

from .tool import INVALID_TODOS as INVALID_TODOS
from .tool import NO_SESSION_LOG as NO_SESSION_LOG
from .tool import STATUSES as STATUSES
from .tool import TodoConfig as TodoConfig
from .tool import plugin as plugin

__all__ = ["INVALID_TODOS", "NO_SESSION_LOG", "STATUSES", "TodoConfig", "plugin"]
