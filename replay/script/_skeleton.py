"""The skeleton of a session: what a re-run must reproduce of a recording (turn and step boundaries, each tool
call's name and arguments, how each turn ended; each approval asked, naming its call, and how it was decided; each
hook run's point and decision; each slash command run), and the readable diff of two skeletons at their first divergence.
Prompt text, chunk timing, ids, times and tool output are left out: they may differ without the behaviour
differing."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from dsh.runtime.session import (
    ApprovalAsked,
    ApprovalDecided,
    CommandRun,
    HookResult,
    StepStart,
    StoredEvent,
    ToolCall,
    TurnEnd,
    TurnStart,
)

from ..recordings._placeholders import CWD_PLACEHOLDER

__all__ = ["first_divergence", "skeleton"]


def _arguments(raw: str, cwd: str | None) -> str:
    text = raw if cwd is None else raw.replace(cwd, CWD_PLACEHOLDER)
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return text  # not JSON: compared as written (the tool itself reports the bad arguments)


_SKELETON = frozenset(
    {
        TurnStart.TAG,
        StepStart.TAG,
        ToolCall.TAG,
        TurnEnd.TAG,
        ApprovalAsked.TAG,
        ApprovalDecided.TAG,
        HookResult.TAG,
        CommandRun.TAG,
    }
)


def skeleton(events: Iterable[StoredEvent], *, seed: int = 0, cwd: str | None = None) -> list[str]:
    """One line per boundary, call and ending of the events at seq >= `seed`. `cwd`, when given, is written back as
    `{{cwd}}` in tool arguments, so a re-run in another workspace compares equal to its recording."""
    lines: list[str] = []
    for event in events:
        if event.seq < seed:
            continue
        if event.type not in _SKELETON:
            continue
        view = event.view()  # decoded once, through the log's event table
        if isinstance(view, TurnStart):
            lines.append(f"turn {view.data.turn}")
        elif isinstance(view, StepStart):
            lines.append(f"  step {view.data.turn}.{view.data.step}")
        elif isinstance(view, ToolCall):
            lines.append(f"    call {view.data.name} {_arguments(view.data.arguments, cwd)}")
        elif isinstance(view, TurnEnd):
            lines.append(f"turn {view.data.turn} ended {view.data.reason.kind}")
        elif isinstance(view, ApprovalAsked):
            lines.append(f"      approval asked for {view.data.tool_name} call {view.data.call_id}")
        elif isinstance(view, ApprovalDecided):
            lines.append(f"      approval decided {view.data.outcome}")
        elif isinstance(view, HookResult):
            lines.append(f"      hook {view.data.point} decided {view.data.decision}")
        elif isinstance(view, CommandRun):
            lines.append(f"command /{view.data.name}{view.data.args}")
    return lines


def first_divergence(recorded: Sequence[str], replayed: Sequence[str], *, context: int = 3) -> str | None:
    """None when equal; else a readable diff around the first line that differs."""
    at = next(
        (i for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)) if a != b),
        min(len(recorded), len(replayed)),
    )
    if at == len(recorded) == len(replayed):
        return None
    start = max(0, at - context)
    lines = [f"first divergence at skeleton line {at + 1}:"]
    for i in range(start, at):
        lines.append(f"    {recorded[i]}")
    lines.append(
        f"  - recorded: {recorded[at] if at < len(recorded) else '(nothing: the recording ends here)'}"
    )
    lines.append(f"  + replayed: {replayed[at] if at < len(replayed) else '(nothing: the replay ends here)'}")
    return "\n".join(lines)
