"""The `hooks` plugin: Claude Code's and Codex's `hooks.json` command hooks at dsh's seams, logged as the original
logs them (`hook/invoked`, `hook/result`)."""

from ._plugin import BLOCKED as BLOCKED
from ._plugin import DIALECTS as DIALECTS
from ._plugin import HOOK_RUNS as HOOK_RUNS
from ._plugin import HOOKS as HOOKS
from ._plugin import HookPoint as HookPoint
from ._plugin import Hooks as Hooks
from ._plugin import HooksConfig as HooksConfig
from ._plugin import ServedRun as ServedRun
from ._plugin import plugin as plugin
from ._protocol import POINTS as POINTS
from ._protocol import HookOutput as HookOutput
from ._protocol import matches as matches
from ._protocol import merge as merge
from ._protocol import parse_config as parse_config
from ._protocol import parse_output as parse_output
from ._protocol import run_command as run_command

__all__ = [
    "BLOCKED",
    "DIALECTS",
    "HOOKS",
    "HOOK_RUNS",
    "POINTS",
    "HookPoint",
    "HookOutput",
    "Hooks",
    "HooksConfig",
    "ServedRun",
    "matches",
    "merge",
    "parse_config",
    "parse_output",
    "plugin",
    "run_command",
]
