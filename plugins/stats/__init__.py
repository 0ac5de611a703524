"""The `stats` plugin: the deployment's price table, which `dsh sessions stats` and `sessions list --usage` read to
state what a session cost."""

from ._plugin import DEEPSEEK_PRICES as DEEPSEEK_PRICES
from ._plugin import StatsConfig as StatsConfig
from ._plugin import plugin as plugin

__all__ = ["DEEPSEEK_PRICES", "StatsConfig", "plugin"]
