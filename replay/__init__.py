"""Record, replay and golden tooling for dsh sessions: replay scripts derived from recorded logs, the replay
adapter that serves them to a live run, the override sidecar, the `replay` plugin and the `dsh replay` commands."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # the names for type checkers; at run time each is imported on first use
    from ._adapter import ReplayAdapter as ReplayAdapter
    from ._adapter import SessionLookup as SessionLookup
    from ._authored import Reply as Reply
    from ._authored import ScriptedModel as ScriptedModel
    from ._authored import load_replies as load_replies
    from ._authored import scripted_plugin as scripted_plugin
    from ._cli import record_scenario as record_scenario
    from ._cli import replay_app as replay_app
    from ._errors import OverrideError as OverrideError
    from ._errors import RecordingEnded as RecordingEnded
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
    from ._placeholders import CWD_PLACEHOLDER as CWD_PLACEHOLDER
    from ._placeholders import with_cwd as with_cwd
    from ._plugin import DEFAULT_PROVIDER as DEFAULT_PROVIDER
    from ._plugin import REPLAY as REPLAY
    from ._plugin import ReplayConfig as ReplayConfig
    from ._plugin import plugin as plugin
    from ._recording import Recording as Recording
    from ._recording import load_recording as load_recording
    from ._recording import stored_recording as stored_recording
    from ._replayed import ToolCallRecord as ToolCallRecord
    from ._report import RerunReport as RerunReport
    from ._report import rerun_stored as rerun_stored
    from ._report import write_scenario as write_scenario
    from ._rerun import Rerun as Rerun
    from ._rerun import golden_jsonl as golden_jsonl
    from ._rerun import record as record
    from ._rerun import rerun as rerun
    from ._scenario import Scenario as Scenario
    from ._scenario import ScenarioDoc as ScenarioDoc
    from ._scenario import discover as discover
    from ._scenario import load_scenario as load_scenario
    from ._scenario import with_replay as with_replay
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
    from ._skeleton import first_divergence as first_divergence
    from ._skeleton import skeleton as skeleton
    from ._source import LogInfo as LogInfo
    from ._source import RecordedLog as RecordedLog
    from ._source import read_log as read_log
    from ._source import stored_log as stored_log

__all__ = [
    "Reply",
    "ScriptedModel",
    "load_replies",
    "scripted_plugin",
    "record_scenario",
    "CWD_PLACEHOLDER",
    "with_cwd",
    "Rerun",
    "ToolCallRecord",
    "golden_jsonl",
    "record",
    "rerun",
    "rerun_stored",
    "write_scenario",
    "RerunReport",
    "Scenario",
    "ScenarioDoc",
    "discover",
    "load_scenario",
    "with_replay",
    "first_divergence",
    "skeleton",
    "DEFAULT_PROVIDER",
    "REPLAY",
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
    "ReplayAdapter",
    "ReplayConfig",
    "RecordingEnded",
    "ReplayMismatch",
    "Script",
    "ScriptEntry",
    "ScriptError",
    "SessionLookup",
    "Throw",
    "ThrowOverride",
    "derive_entries",
    "derive_script",
    "format_call",
    "load_overrides",
    "load_recording",
    "parse_overrides",
    "plugin",
    "read_log",
    "recorded_turns",
    "replay_app",
    "stored_log",
    "stored_recording",
]

_LAZY = {
    "ReplayAdapter": "._adapter",
    "SessionLookup": "._adapter",
    "Reply": "._authored",
    "ScriptedModel": "._authored",
    "load_replies": "._authored",
    "scripted_plugin": "._authored",
    "record_scenario": "._cli",
    "replay_app": "._cli",
    "OverrideError": "._errors",
    "RecordingEnded": "._errors",
    "ReplayMismatch": "._errors",
    "ScriptError": "._errors",
    "format_call": "._errors",
    "HangOverride": "._overrides",
    "Override": "._overrides",
    "OverrideFile": "._overrides",
    "Overrides": "._overrides",
    "PatchOverride": "._overrides",
    "ReplaceOverride": "._overrides",
    "ThrowOverride": "._overrides",
    "load_overrides": "._overrides",
    "parse_overrides": "._overrides",
    "CWD_PLACEHOLDER": "._placeholders",
    "with_cwd": "._placeholders",
    "DEFAULT_PROVIDER": "._plugin",
    "REPLAY": "._plugin",
    "ReplayConfig": "._plugin",
    "plugin": "._plugin",
    "Recording": "._recording",
    "load_recording": "._recording",
    "stored_recording": "._recording",
    "ToolCallRecord": "._replayed",
    "RerunReport": "._report",
    "rerun_stored": "._report",
    "write_scenario": "._report",
    "Rerun": "._rerun",
    "golden_jsonl": "._rerun",
    "record": "._rerun",
    "rerun": "._rerun",
    "Scenario": "._scenario",
    "ScenarioDoc": "._scenario",
    "discover": "._scenario",
    "load_scenario": "._scenario",
    "with_replay": "._scenario",
    "EntryKind": "._script",
    "FinishKind": "._script",
    "Hang": "._script",
    "RecordedTurn": "._script",
    "Script": "._script",
    "ScriptEntry": "._script",
    "Throw": "._script",
    "derive_entries": "._script",
    "derive_script": "._script",
    "recorded_turns": "._script",
    "first_divergence": "._skeleton",
    "skeleton": "._skeleton",
    "LogInfo": "._source",
    "RecordedLog": "._source",
    "read_log": "._source",
    "stored_log": "._source",
}
"""Where each public name lives: importing one submodule (or using one name) imports no other."""

if not TYPE_CHECKING:  # a module __getattr__ would make type checkers accept any name
    from dsh.runtime.lazy import lazy_attributes

    __getattr__ = lazy_attributes(__name__, _LAZY, globals())
    del lazy_attributes


del TYPE_CHECKING  # not a public name
