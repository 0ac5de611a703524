"""The `bash` tool plugin."""

from .sandbox import POLICIES as POLICIES
from .sandbox import Policy as Policy
from .sandbox import Sandbox as Sandbox
from .sandbox import SandboxUnavailableError as SandboxUnavailableError
from .sandbox import policy_text as policy_text
from .shell import ShellOutcome as ShellOutcome
from .shell import TailBuffer as TailBuffer
from .shell import run_shell as run_shell
from .tool import DESCRIPTION as DESCRIPTION
from .tool import SANDBOX_CONTEXT as SANDBOX_CONTEXT
from .tool import SECTION as SECTION
from .tool import BashConfig as BashConfig
from .tool import EnvConfig as EnvConfig
from .tool import LimitsConfig as LimitsConfig
from .tool import format_outcome as format_outcome
from .tool import plugin as plugin

__all__ = [
    "DESCRIPTION",
    "POLICIES",
    "SANDBOX_CONTEXT",
    "SECTION",
    "BashConfig",
    "EnvConfig",
    "LimitsConfig",
    "Policy",
    "Sandbox",
    "SandboxUnavailableError",
    "ShellOutcome",
    "TailBuffer",
    "format_outcome",
    "plugin",
    "policy_text",
    "run_shell",
]
