"""A scenario's goldens (syrupy's amber file `__snapshots__/scenario.ambr` beside it) compared with a re-run, and
how a difference is reported: the golden line, the JSON path of the first difference in it with the two values,
then the two whole lines. The pytest plugin and `dsh replay PATH` report through here, so the command a pytest
failure prints reproduces it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..driver._rerun import Rerun

__all__ = [
    "GOLDENS",
    "GOLDEN_DIR",
    "GOLDEN_FILE",
    "ITEM_NAME",
    "compare_goldens",
    "first_difference",
    "json_difference",
    "replayed_goldens",
]

GOLDEN_DIR = "__snapshots__"
GOLDEN_FILE = "scenario.ambr"
GOLDENS = ("log", "view")
ITEM_NAME = "replay"
"""Every scenario's one item is named this, so its goldens are `replay[log]` and `replay[view]` whichever
directory the scenario moves to."""

_SHOWN = 160
_ABSENT = object()


def replayed_goldens(result: Rerun) -> dict[str, Any]:
    """What each golden of a scenario holds, from its re-run."""
    from ..driver._rerun import golden_jsonl

    return {"log": [golden_jsonl(log) for _, log in result.logs], "view": result.view}


def compare_goldens(directory: Path, result: Rerun) -> list[str] | None:
    """Each golden of the scenario in `directory` that `result` does not match, as a report (empty: all match);
    None when the scenario has no goldens. Raises `ModuleNotFoundError` when it has some and syrupy, whose format
    they are in, is not installed."""
    path = directory / GOLDEN_DIR / GOLDEN_FILE
    if not path.is_file():
        return None
    from syrupy.extensions.amber.serializer import AmberDataSerializer

    stored = AmberDataSerializer.read_file(str(path))
    replayed = replayed_goldens(result)
    if (
        stored.get(f"{ITEM_NAME}[prompt]") is not None
    ):  # the opt-in prompt golden, when the scenario keeps one
        from ..driver._prompts import prompt_golden

        replayed["prompt"] = prompt_golden([log for _, log in result.logs])
    reports = []
    for name, data in replayed.items():
        golden = stored.get(f"{ITEM_NAME}[{name}]")
        what = {"log": "replayed log", "view": "view (what the user saw)"}.get(name, "prompt and tools sent")
        where = f"{GOLDEN_DIR}/{GOLDEN_FILE} [{ITEM_NAME}[{name}]]"
        if golden is None or golden.data is None:
            reports.append(f"the golden of the {what} ({where}) does not exist yet")
            continue
        serialized = AmberDataSerializer.serialize(data)
        if serialized != golden.data:
            reports.append(
                f"the {what} differs from its golden {where}\n{first_difference(str(golden.data), serialized)}"
            )
    return reports


def _located(event: object) -> str:
    """Where a golden log line is: its event type, seq, turn, step and call, when it is one event of a log."""
    if not isinstance(event, dict) or "type" not in event:
        return ""
    data: dict[str, Any] = event["data"] if isinstance(event.get("data"), dict) else {}
    parts = [str(event["type"])]
    if "seq" in event:
        parts.append(f"seq {event['seq']}")
    if "turn" in data:
        parts.append(f"turn {data['turn']}" + (f" step {data['step']}" if "step" in data else ""))
    message = data.get("message")
    source = message.get("source") if isinstance(message, dict) else None
    call = data.get("callId") or (source.get("callId") if isinstance(source, dict) else None)
    if call:
        parts.append(f"call {call}" + (f" ({data['name']})" if "name" in data else ""))
    return ", ".join(parts)


def _json(line: str) -> object:
    try:
        return json.loads(line)
    except ValueError:
        return _ABSENT


def json_difference(old: object, new: object, path: str = "$") -> tuple[str, object, object] | None:
    """The JSON path of the first place `old` and `new` differ, with the value each has there (`_ABSENT`: none),
    walking objects key by key (old's order, then keys only new has) and arrays index by index; None: equal."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            found = json_difference(old.get(key, _ABSENT), new.get(key, _ABSENT), f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        for index in range(max(len(old), len(new))):
            found = json_difference(
                old[index] if index < len(old) else _ABSENT,
                new[index] if index < len(new) else _ABSENT,
                f"{path}[{index}]",
            )
            if found is not None:
                return found
        return None
    if old == new and type(old) is type(new):
        return None
    return path, old, new


def _value(value: object) -> str:
    if value is _ABSENT:
        return "(absent)"
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= _SHOWN else shown[: _SHOWN - 1] + "…"


def first_difference(golden: str, replayed: str) -> str:
    """The first line where two goldens' texts differ: where it is (for a log line: the event, its seq, turn, step
    and call), the JSON path of the first difference inside it with both values, then both whole lines."""
    old, new = golden.splitlines(), replayed.splitlines()
    at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    had = old[at].strip() if at < len(old) else "(nothing: the golden ends here)"
    did = new[at].strip() if at < len(new) else "(nothing: the replay ends here)"
    had_json, did_json = _json(had), _json(did)
    place = _located(had_json) or _located(did_json)
    lines = [f"  first difference at golden line {at + 1}" + (f" ({place})" if place else "") + ":"]
    if had_json is not _ABSENT and did_json is not _ABSENT:
        found = json_difference(had_json, did_json)
        if found is not None:
            path, was, now = found
            lines.append(f"  at {path}: golden {_value(was)}, replayed {_value(now)}")
    lines += [f"  - golden (the recording): {had}", f"  + replayed:                {did}"]
    return "\n".join(lines)
