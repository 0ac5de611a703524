"""A recording: the scripts of one recorded run, the primary (root) log and its child logs, with the primary's
overrides applied (dsh's keyed `override.json`, or the original's positional `replay.override.json`). Loaded from a
scenario directory, from JSONL files, or from a session store."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from dsh.runtime.session import SessionStoreProtocol

from ..recordings._errors import ScriptError, format_call
from ..recordings._source import RecordedLog, read_log, stored_log
from ._overrides import Overrides, parse_overrides
from ._positional import positional_overrides
from ._script import Script, derive_entries, recorded_script

__all__ = ["Recording", "derive_script", "load_recording", "read_overrides", "stored_recording"]

ROOT_LOG = "session.jsonl"
OVERRIDE_FILE = "override.json"
ORIGINAL_OVERRIDE_FILE = "replay.override.json"
_CHILD = re.compile(r"session\.(\d+)\.jsonl")


@dataclass(frozen=True, slots=True)
class Recording:
    """The primary log's script and its child logs' scripts, children ordered by `createdAt`, then id (the order in
    which the original numbered them), each sliced at its seed; `logs` are the recorded logs themselves, in the same
    order (what a recorded tool's result is read from)."""

    root: Script
    children: tuple[Script, ...] = ()
    logs: tuple[RecordedLog, ...] = ()

    @property
    def scripts(self) -> tuple[Script, ...]:
        return (self.root, *self.children)

    @property
    def providers(self) -> tuple[str, ...]:
        """Every provider id the recording's request headers name, in order of first appearance."""
        seen: dict[str, None] = {}
        for script in self.scripts:
            seen.update(dict.fromkeys(script.providers))
        return tuple(seen)

    def context_window(self, provider: str, model: str) -> int | None:
        """The context window the recording's `request/context` stated for (`provider`, `model`): the primary log's
        last one, else the first child log's that names the route; None when no log stated one."""
        for script in self.scripts:
            if (provider, model) in script.windows:
                return script.windows[(provider, model)]
        return None


def derive_script(log: RecordedLog, overrides: Overrides | None = None) -> Script:
    """The log's script with `overrides` applied. A call whose stream has no finish and no override covering it
    raises `ScriptError` naming its key and where it was recorded; so does a bad chunk."""
    recorded = recorded_script(log)
    entries = recorded.entries
    if overrides is not None:
        entries = overrides.apply(entries, log.info)
    for entry in entries:
        if not entry.finished:
            where = f" in {overrides.file}" if overrides is not None else " (override.json)"
            raise ScriptError(
                f"the stream of call {format_call(entry.call)} has no finish chunk (cancelled mid-stream, or the log "
                f"is torn); replaying it needs an override{where}: hang, throw, replace or patch for turn "
                f"{entry.call.turn}, step {entry.call.step}, attempt {entry.call.attempt}",
                place=entry.place,
                call=entry.call,
            )
    return dataclasses.replace(recorded, entries=entries)


def _recording(root: RecordedLog, children: Sequence[RecordedLog], overrides: Overrides | None) -> Recording:
    ordered = sorted(children, key=lambda log: (log.info.created_at, log.info.id))
    return Recording(
        derive_script(root, overrides), tuple(derive_script(child) for child in ordered), (root, *ordered)
    )


def child_logs(directory: Path) -> list[Path]:
    """`session.1.jsonl`, `session.2.jsonl`, ... of a scenario directory, in number order."""
    numbered = [
        (int(match.group(1)), path)
        for path in directory.iterdir()
        if (match := _CHILD.fullmatch(path.name)) is not None
    ]
    return [path for _, path in sorted(numbered)]


def load_recording(
    log: str | Path, *, children: Sequence[str | Path] = (), override: str | Path | None = None
) -> Recording:
    """The recording of `log`: a JSONL file, or a scenario directory holding `session.jsonl`, its child logs
    `session.N.jsonl` and optionally `override.json` (which applies to the primary log). `children` adds child logs,
    `override` names an override file (for a directory: instead of its `override.json`)."""
    path = Path(log)
    child_paths = [Path(child) for child in children]
    if path.is_dir():
        directory = path
        path = directory / ROOT_LOG
        if not path.is_file():
            raise ScriptError(
                f"no {ROOT_LOG} here; a scenario directory holds {ROOT_LOG} (+ session.N.jsonl, override.json)",
                place=str(directory),
            )
        child_paths = child_logs(directory) + child_paths
        if override is None and (directory / OVERRIDE_FILE).is_file():
            override = directory / OVERRIDE_FILE
        elif override is None and (directory / ORIGINAL_OVERRIDE_FILE).is_file():
            override = (
                directory / ORIGINAL_OVERRIDE_FILE
            )  # dsh's keyed override.json wins when both are there
    root = read_log(path)
    overrides = None if override is None else read_overrides(override, root)
    return _recording(root, [read_log(child) for child in child_paths], overrides)


def read_overrides(path: str | Path, log: RecordedLog) -> Overrides:
    """The override file at `path` for `log`: dsh's keyed `{"overrides": [...]}`, or the original's positional
    `replay.override.json` (a list of entries, or `{"patches": [...]}`), placed by the calls `log` recorded."""
    path = Path(path)
    data = path.read_bytes()
    try:
        top = msgspec.json.decode(data)
    except msgspec.DecodeError:
        top = None  # parse_overrides says what is wrong with it
    if isinstance(top, list) or (isinstance(top, dict) and "patches" in top):
        return positional_overrides(data, file=str(path), derived=derive_entries(log)[0])
    return parse_overrides(data, file=str(path))


def stored_recording(
    store: SessionStoreProtocol, session_id: str, *, override: str | Path | None = None
) -> Recording:
    """The recording of a stored session and every session below it (children, grandchildren, ...)."""
    sessions = store.sessions()
    below: set[str] = {session_id}
    grew = True
    while grew:  # a child may sort before its parent (equal createdAt): repeat until nothing joins
        joined = {info.id for info in sessions if info.parent_id in below} - below
        below |= joined
        grew = bool(joined)
    children = [stored_log(store, info.id) for info in sessions if info.id in below and info.id != session_id]
    root = stored_log(store, session_id)
    overrides = None if override is None else read_overrides(override, root)
    return _recording(root, children, overrides)
