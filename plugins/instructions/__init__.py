"""The `instructions` plugin: a workspace's AGENTS.md and CLAUDE.md reach the model as `agent-instructions` user
messages, worded and budgeted as the original sends them."""

from ._compose import Composed as Composed
from ._compose import compose as compose
from ._config import Config as Config
from ._config import baseline_identity as baseline_identity
from ._plugin import TOUCHING_TOOLS as TOUCHING_TOOLS
from ._plugin import Instructions as Instructions
from ._plugin import plugin as plugin

__all__ = ["TOUCHING_TOOLS", "Composed", "Config", "Instructions", "baseline_identity", "compose", "plugin"]
