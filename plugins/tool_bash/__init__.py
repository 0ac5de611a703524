"""The `bash` tool plugin."""

from .shell import ShellOutcome as ShellOutcome
from .shell import TailBuffer as TailBuffer
from .shell import run_shell as run_shell
from .tool import DESCRIPTION as DESCRIPTION
from .tool import SECTION as SECTION
from .tool import BashConfig as BashConfig
from .tool import format_outcome as format_outcome
from .tool import plugin as plugin

__all__ = [
    "DESCRIPTION",
    "SECTION",
    "BashConfig",
    "ShellOutcome",
    "TailBuffer",
    "format_outcome",
    "plugin",
    "run_shell",
]
