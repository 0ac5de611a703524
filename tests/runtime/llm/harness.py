"""Reading the recorded logs in fixtures/harness/ for the transport's tests: chunk events with packed rows expanded,
grouped into model calls (a group closes at its `finish`), each with the message the recording wrote for it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from dsh.runtime.session import decode_data

HARNESS = Path(__file__).resolve().parents[3] / "fixtures" / "harness"
# Recorded logs only: `*.expected.jsonl` files are the original's expected outputs (a repaired log holds an
# unfinished stream), not recordings of model calls.
LOGS = sorted(p for p in HARNESS.glob("*/session*.jsonl") if not p.name.endswith(".expected.jsonl"))


def chunk_payloads(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, chunk JSON) for every chunk of the log, packed rows expanded to their member chunks."""
    out: list[tuple[int, dict[str, Any]]] = []
    for line_no, line in enumerate(path.read_text().splitlines(), 1):
        for _, chunk in _chunks_of(json.loads(line)):
            out.append((line_no, chunk))
    return out


def _chunks_of(event: dict[str, Any]) -> list[tuple[tuple[int, int], dict[str, Any]]]:
    kind = event["type"]
    if kind == "assistant/chunk":
        data = event["data"]
        return [((data["turn"], data["step"]), data["chunk"])]
    if kind in ("text-chunks", "reasoning-chunks"):
        data = event["data"]
        tag = "text-delta" if kind == "text-chunks" else "reasoning-delta"
        return [
            ((data["turn"], data["step"]), {"type": tag, "index": data["index"], "text": t})
            for t in data["texts"]
        ]
    if kind == "tool-call-chunks":
        data = event["data"]
        head: dict[str, Any] = {"type": "tool-call-delta", "index": data["index"], "id": data["id"]}
        if "name" in data:
            head["name"] = data["name"]
        return [((data["turn"], data["step"]), {**head, "argumentsDelta": a}) for a in data["args"]]
    return []


@dataclass
class Call:
    """One recorded model call: its chunks, and the assistant message written after it (if any)."""

    log: str
    key: tuple[int, int]
    chunks: list[dict[str, Any]] = field(default_factory=list)
    message: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    interrupted: bool = False

    @property
    def finish(self) -> dict[str, Any] | None:
        return self.chunks[-1] if self.chunks and self.chunks[-1]["type"] == "finish" else None


def recorded_calls(path: Path) -> list[Call]:
    calls: list[Call] = []
    open_call: Call | None = None
    name = f"{path.parent.name}/{path.name}"
    for line in path.read_text().splitlines():
        event = json.loads(line)
        for key, chunk in _chunks_of(event):
            if open_call is None or open_call.key != key or open_call.finish is not None:
                open_call = Call(name, key)
                calls.append(open_call)
            open_call.chunks.append(chunk)
        if event["type"] == "assistant/message":
            data = event["data"]
            owner = next(c for c in reversed(calls) if c.key == (data["turn"], data["step"]))
            # read through the log's event table, which converts the older shapes the original still reads
            typed = decode_data("assistant/message", json.dumps(data), event["seq"])
            owner.message = msgspec.json.decode(msgspec.json.encode(typed.message))
            owner.usage = data.get("usage")
            owner.interrupted = bool(data.get("interrupted"))
    return calls


ALL_CALLS = [call for log in LOGS for call in recorded_calls(log)]
