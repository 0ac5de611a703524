"""The skeleton of a session: what a re-run must reproduce of a recording (turn and step boundaries, each tool
call's name and arguments, how each turn ended), and the readable diff of two skeletons at their first divergence.
Prompt text, chunk timing, ids, times and tool output are left out: they may differ without the behaviour
differing."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import msgspec

from runtime.session import StoredEvent

from ._placeholders import CWD_PLACEHOLDER

__all__ = ["first_divergence", "skeleton"]


class _Turn(msgspec.Struct):
    turn: int


class _Step(msgspec.Struct):
    turn: int
    step: int


class _Call(msgspec.Struct):
    name: str
    arguments: str


class _Reason(msgspec.Struct):
    kind: str


class _TurnEnd(msgspec.Struct):
    turn: int
    reason: _Reason


_TURN = msgspec.json.Decoder(_Turn)
_STEP = msgspec.json.Decoder(_Step)
_CALL = msgspec.json.Decoder(_Call)
_TURN_END = msgspec.json.Decoder(_TurnEnd)


def _arguments(raw: str, cwd: str | None) -> str:
    text = raw if cwd is None else raw.replace(cwd, CWD_PLACEHOLDER)
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return text  # not JSON: compared as written (the tool itself reports the bad arguments)


def skeleton(events: Iterable[StoredEvent], *, seed: int = 0, cwd: str | None = None) -> list[str]:
    """One line per boundary, call and ending of the events at seq >= `seed`. `cwd`, when given, is written back as
    `{{cwd}}` in tool arguments, so a re-run in another workspace compares equal to its recording."""
    lines: list[str] = []
    for event in events:
        if event.seq < seed:
            continue
        kind = event.type
        if kind == "turn/start":
            lines.append(f"turn {_TURN.decode(event.data).turn}")
        elif kind == "step/start":
            step = _STEP.decode(event.data)
            lines.append(f"  step {step.turn}.{step.step}")
        elif kind == "tool/call":
            call = _CALL.decode(event.data)
            lines.append(f"    call {call.name} {_arguments(call.arguments, cwd)}")
        elif kind == "turn/end":
            end = _TURN_END.decode(event.data)
            lines.append(f"turn {end.turn} ended {end.reason.kind}")
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
