"""Record, replay and golden tooling for dsh sessions: replay scripts derived from recorded logs and the override
sidecar."""

from ._errors import OverrideError as OverrideError
from ._errors import ReplayMismatch as ReplayMismatch
from ._errors import ScriptError as ScriptError
from ._errors import format_call as format_call
from ._overrides import HangOverride as HangOverride
from ._overrides import Override as Override
from ._overrides import OverrideFile as OverrideFile
from ._overrides import Overrides as Overrides
from ._overrides import PatchOverride as PatchOverride
from ._overrides import ReplaceOverride as ReplaceOverride
from ._overrides import ThrowOverride as ThrowOverride
from ._overrides import load_overrides as load_overrides
from ._overrides import parse_overrides as parse_overrides
from ._recording import Recording as Recording
from ._recording import load_recording as load_recording
from ._recording import stored_recording as stored_recording
from ._script import EntryKind as EntryKind
from ._script import FinishKind as FinishKind
from ._script import Hang as Hang
from ._script import RecordedTurn as RecordedTurn
from ._script import Script as Script
from ._script import ScriptEntry as ScriptEntry
from ._script import Throw as Throw
from ._script import derive_entries as derive_entries
from ._script import derive_script as derive_script
from ._script import recorded_turns as recorded_turns
from ._source import LogInfo as LogInfo
from ._source import RecordedLog as RecordedLog
from ._source import read_log as read_log
from ._source import stored_log as stored_log

__all__ = [
    "EntryKind",
    "FinishKind",
    "Hang",
    "HangOverride",
    "LogInfo",
    "Override",
    "OverrideError",
    "OverrideFile",
    "Overrides",
    "PatchOverride",
    "RecordedLog",
    "RecordedTurn",
    "Recording",
    "ReplaceOverride",
    "ReplayMismatch",
    "Script",
    "ScriptEntry",
    "ScriptError",
    "Throw",
    "ThrowOverride",
    "derive_entries",
    "derive_script",
    "format_call",
    "load_overrides",
    "load_recording",
    "parse_overrides",
    "read_log",
    "recorded_turns",
    "stored_log",
    "stored_recording",
]
