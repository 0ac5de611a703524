"""What a replay sent the model, read back from the replayed logs' `request/header` events: the prompt golden (the
system prompt and tool schemas of each distinct step, in order), and the stale-recording checks that compare the
tools offered with the tools the recording called and saw.

A recording calling a tool the deployment no longer offers cannot be replayed faithfully: `gone_tools` names it and
the re-run fails. A tool offered that no `request/header` of the recording listed was added after the recording was
made: `unseen_tools` names it, and the runner reports it once per run ("recorded before tool X existed: re-record to
cover it"). A recording whose headers hold no tool list (the original harness wrote `{{tools}}`) is not judged.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from dsh.runtime.session import RequestHeader, StepStart

from ..recordings._replayed import log_events
from ..recordings._source import RecordedLog
from ..script._recording import Recording
from ._adapter import called_tools

__all__ = [
    "UNSEEN_NOTE",
    "gone_tools",
    "offered_tools",
    "prompt_golden",
    "recorded_tools",
    "unseen_note",
    "unseen_tools",
]

UNSEEN_NOTE = "recorded before tool {tool} existed: re-record to cover it"


def _headers(events: Iterable[Any]) -> Iterable[tuple[tuple[int, int] | None, dict[str, Any]]]:
    """Each `request/header`'s header, with the (turn, step) of the step it opened (None outside a step)."""
    at: tuple[int, int] | None = None
    for event in events:
        if event.type == StepStart.TAG:
            data = msgspec.json.decode(event.data)
            at = (data.get("turn", 0), data.get("step", 0))
        elif event.type == RequestHeader.TAG:
            header = msgspec.json.decode(event.data).get("header")
            if isinstance(header, dict):
                yield at, header


def _names(tools: Any) -> list[str] | None:
    """The tool names of a header's `tools` (schemas, or the original's list of names); None for a placeholder."""
    if not isinstance(tools, list):
        return None
    return [t if isinstance(t, str) else str(t.get("name")) for t in tools if isinstance(t, str | dict)]


def offered_tools(logs: Sequence[bytes]) -> set[str]:
    """Every tool a replayed run offered the model, over all its sessions."""
    return {
        name
        for log in logs
        for _, header in _headers(log_events(log))
        for name in _names(header.get("tools")) or ()
    }


def recorded_tools(logs: Sequence[RecordedLog]) -> set[str] | None:
    """Every tool the recording's headers listed; None when none of them holds a list (nothing to judge by)."""
    seen: set[str] | None = None
    for log in logs:
        for _, header in _headers(event for event, _ in log.events()):
            names = _names(header.get("tools"))
            if names is not None:
                seen = (seen or set()) | set(names)
    return seen


def gone_tools(recording: Recording, offered: set[str]) -> str | None:
    """Why the recording cannot be replayed by a deployment offering `offered`: the tools it calls that are not
    among them, each with the first call that used it; None when every one is offered."""
    missing: dict[str, str] = {}
    for script in recording.scripts:
        for entry in script.entries:
            for name in called_tools(entry.chunks):
                if name not in offered:
                    missing.setdefault(name, f"{name} (called at {entry.describe()} in {script.log.name})")
    if not missing:
        return None
    return (
        f"the recording calls {', '.join(missing.values())}, which the deployment no longer offers "
        f"(it offers: {', '.join(sorted(offered)) or 'no tool'}); load the tool again, or re-record the scenario"
    )


def unseen_tools(recorded: set[str] | None, offered: set[str]) -> tuple[str, ...]:
    """The tools offered that the recording never saw (empty when the recording listed none)."""
    return () if recorded is None else tuple(sorted(offered - recorded))


def unseen_note(tool: str) -> str:
    return UNSEEN_NOTE.format(tool=tool)


def prompt_golden(logs: Sequence[bytes]) -> str:
    """The third golden: per session, the system prompt and tool schemas of each distinct step that sent them
    (a repeat of the previous one is left out), in order, with the step that first sent each."""
    out: list[str] = []
    for number, log in enumerate(logs):
        out.append("# the primary session" if number == 0 else f"# child session {number}")
        previous: tuple[str, str] | None = None
        for at, header in _headers(log_events(log)):
            system = str(header.get("system", ""))
            tools = json.dumps(header.get("tools", []), indent=2, sort_keys=True, ensure_ascii=False)
            if (system, tools) == previous:
                continue
            previous = (system, tools)
            where = "outside a step" if at is None else f"turn {at[0]} step {at[1]}"
            out += [f"## sent at {where}", "### system", system, "### tools", tools]
    return "\n".join(out) + "\n"
