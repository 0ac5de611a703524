"""The `interaction` plugin: approval policies, permission presets, sandbox modes and the slash commands that set
them; every approval asked and decided is in the session log."""

from ._ask_user import ASK_USER_QUESTION as ASK_USER_QUESTION
from ._ask_user import NO_ONE_TO_ASK as NO_ONE_TO_ASK
from ._ask_user import ask_user_tool as ask_user_tool
from ._plugin import InteractionConfig as InteractionConfig
from ._plugin import plugin as plugin
from ._policy import APPROVAL_CONTEXT as APPROVAL_CONTEXT
from ._policy import POLICIES as POLICIES
from ._policy import PRESETS as PRESETS
from ._policy import SANDBOX_MODES as SANDBOX_MODES
from ._policy import Knobs as Knobs
from ._policy import Preset as Preset
from ._policy import fold_knobs as fold_knobs
from ._policy import policy_text as policy_text
from ._policy import wider as wider
from ._service import COMMANDS as COMMANDS
from ._service import INTERACTION as INTERACTION
from ._service import CommandOutcome as CommandOutcome
from ._service import Interaction as Interaction

__all__ = [
    "APPROVAL_CONTEXT",
    "ASK_USER_QUESTION",
    "COMMANDS",
    "INTERACTION",
    "NO_ONE_TO_ASK",
    "POLICIES",
    "PRESETS",
    "SANDBOX_MODES",
    "CommandOutcome",
    "Interaction",
    "InteractionConfig",
    "Knobs",
    "Preset",
    "ask_user_tool",
    "fold_knobs",
    "plugin",
    "policy_text",
    "wider",
]
