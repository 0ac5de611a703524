"""Record, replay and golden tooling for dsh sessions: replay scripts derived from recorded logs, the replay
adapter that serves them to a live run, the override sidecar, the `replay` plugin and the `dsh replay` commands."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # the names for type checkers; at run time each is imported on first use
    from .driver._adapter import ReplayAdapter as ReplayAdapter
    from .driver._adapter import SessionLookup as SessionLookup
    from .driver._authored import Reply as Reply
    from .driver._authored import ScriptedModel as ScriptedModel
    from .driver._authored import load_replies as load_replies
    from .driver._authored import scripted_plugin as scripted_plugin
    from .driver._plugin import DEFAULT_PROVIDER as DEFAULT_PROVIDER
    from .driver._plugin import HELD_INPUT as HELD_INPUT
    from .driver._plugin import REPLAY as REPLAY
    from .driver._plugin import HeldInput as HeldInput
    from .driver._plugin import ReplayConfig as ReplayConfig
    from .driver._plugin import plugin as plugin
    from .driver._rerun import Rerun as Rerun
    from .driver._rerun import golden_jsonl as golden_jsonl
    from .driver._rerun import record as record
    from .driver._rerun import rerun as rerun
    from .driver._scenario import Scenario as Scenario
    from .driver._scenario import ScenarioDoc as ScenarioDoc
    from .driver._scenario import discover as discover
    from .driver._scenario import load_scenario as load_scenario
    from .driver._scenario import with_replay as with_replay
    from .frontends._cli import record_scenario as record_scenario
    from .frontends._cli import replay_app as replay_app
    from .frontends._report import RerunReport as RerunReport
    from .frontends._report import rerun_stored as rerun_stored
    from .frontends._report import write_scenario as write_scenario
    from .recordings._errors import OverrideError as OverrideError
    from .recordings._errors import RecordingEnded as RecordingEnded
    from .recordings._errors import ReplayMismatch as ReplayMismatch
    from .recordings._errors import ScriptError as ScriptError
    from .recordings._errors import format_call as format_call
    from .recordings._placeholders import CWD_PLACEHOLDER as CWD_PLACEHOLDER
    from .recordings._placeholders import with_cwd as with_cwd
    from .recordings._replayed import ToolCallRecord as ToolCallRecord
    from .recordings._source import LogInfo as LogInfo
    from .recordings._source import RecordedLog as RecordedLog
    from .recordings._source import read_log as read_log
    from .recordings._source import stored_log as stored_log
    from .script._overrides import HangOverride as HangOverride
    from .script._overrides import Override as Override
    from .script._overrides import OverrideFile as OverrideFile
    from .script._overrides import Overrides as Overrides
    from .script._overrides import PatchOverride as PatchOverride
    from .script._overrides import ReplaceOverride as ReplaceOverride
    from .script._overrides import ThrowOverride as ThrowOverride
    from .script._overrides import load_overrides as load_overrides
    from .script._overrides import parse_overrides as parse_overrides
    from .script._recording import Recording as Recording
    from .script._recording import derive_script as derive_script
    from .script._recording import load_recording as load_recording
    from .script._recording import stored_recording as stored_recording
    from .script._script import EntryKind as EntryKind
    from .script._script import FinishKind as FinishKind
    from .script._script import Hang as Hang
    from .script._script import RecordedTurn as RecordedTurn
    from .script._script import Script as Script
    from .script._script import ScriptEntry as ScriptEntry
    from .script._script import Throw as Throw
    from .script._script import derive_entries as derive_entries
    from .script._script import recorded_turns as recorded_turns
    from .script._skeleton import first_divergence as first_divergence
    from .script._skeleton import skeleton as skeleton

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
    "HELD_INPUT",
    "HeldInput",
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
    "ReplayAdapter": ".driver._adapter",
    "SessionLookup": ".driver._adapter",
    "Reply": ".driver._authored",
    "ScriptedModel": ".driver._authored",
    "load_replies": ".driver._authored",
    "scripted_plugin": ".driver._authored",
    "record_scenario": ".frontends._cli",
    "replay_app": ".frontends._cli",
    "OverrideError": ".recordings._errors",
    "RecordingEnded": ".recordings._errors",
    "ReplayMismatch": ".recordings._errors",
    "ScriptError": ".recordings._errors",
    "format_call": ".recordings._errors",
    "HangOverride": ".script._overrides",
    "Override": ".script._overrides",
    "OverrideFile": ".script._overrides",
    "Overrides": ".script._overrides",
    "PatchOverride": ".script._overrides",
    "ReplaceOverride": ".script._overrides",
    "ThrowOverride": ".script._overrides",
    "load_overrides": ".script._overrides",
    "parse_overrides": ".script._overrides",
    "CWD_PLACEHOLDER": ".recordings._placeholders",
    "with_cwd": ".recordings._placeholders",
    "DEFAULT_PROVIDER": ".driver._plugin",
    "HELD_INPUT": ".driver._plugin",
    "HeldInput": ".driver._plugin",
    "REPLAY": ".driver._plugin",
    "ReplayConfig": ".driver._plugin",
    "plugin": ".driver._plugin",
    "Recording": ".script._recording",
    "load_recording": ".script._recording",
    "stored_recording": ".script._recording",
    "ToolCallRecord": ".recordings._replayed",
    "RerunReport": ".frontends._report",
    "rerun_stored": ".frontends._report",
    "write_scenario": ".frontends._report",
    "Rerun": ".driver._rerun",
    "golden_jsonl": ".driver._rerun",
    "record": ".driver._rerun",
    "rerun": ".driver._rerun",
    "Scenario": ".driver._scenario",
    "ScenarioDoc": ".driver._scenario",
    "discover": ".driver._scenario",
    "load_scenario": ".driver._scenario",
    "with_replay": ".driver._scenario",
    "EntryKind": ".script._script",
    "FinishKind": ".script._script",
    "Hang": ".script._script",
    "RecordedTurn": ".script._script",
    "Script": ".script._script",
    "ScriptEntry": ".script._script",
    "Throw": ".script._script",
    "derive_entries": ".script._script",
    "derive_script": ".script._recording",
    "recorded_turns": ".script._script",
    "first_divergence": ".script._skeleton",
    "skeleton": ".script._skeleton",
    "LogInfo": ".recordings._source",
    "RecordedLog": ".recordings._source",
    "read_log": ".recordings._source",
    "stored_log": ".recordings._source",
}
"""Where each public name lives: importing one submodule (or using one name) imports no other."""

if not TYPE_CHECKING:  # a module __getattr__ would make type checkers accept any name
    from dsh.runtime.lazy import lazy_attributes

    __getattr__ = lazy_attributes(__name__, _LAZY, globals())
    del lazy_attributes


del TYPE_CHECKING  # not a public name
