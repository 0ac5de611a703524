"""Context compaction: the token meter, summary compaction on `agent/pre-step`, tool-result pruning and overflow
recovery on `agent/request-error`."""

from ._config import DEFAULT_CONTEXT_WINDOW as DEFAULT_CONTEXT_WINDOW
from ._config import DEFAULT_INSTRUCTIONS as DEFAULT_INSTRUCTIONS
from ._config import Config as Config
from ._meter import Calibration as Calibration
from ._meter import TokenMeter as TokenMeter
from ._plan import CHECKPOINT_PLUGIN as CHECKPOINT_PLUGIN
from ._plugin import plugin as plugin
from ._service import CHECKPOINT_PREAMBLE as CHECKPOINT_PREAMBLE
from ._service import COMPACTION as COMPACTION
from ._service import COMPACTION_PURPOSE as COMPACTION_PURPOSE
from ._service import EMPTY_SUMMARY as EMPTY_SUMMARY
from ._service import SUMMARY_TOO_LONG as SUMMARY_TOO_LONG
from ._service import Compaction as Compaction
from ._service import CompactionOutcome as CompactionOutcome

__all__ = [
    "CHECKPOINT_PLUGIN",
    "CHECKPOINT_PREAMBLE",
    "COMPACTION",
    "COMPACTION_PURPOSE",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_INSTRUCTIONS",
    "EMPTY_SUMMARY",
    "SUMMARY_TOO_LONG",
    "Calibration",
    "Compaction",
    "CompactionOutcome",
    "Config",
    "TokenMeter",
    "plugin",
]
