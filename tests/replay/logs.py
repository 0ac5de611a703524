"""Synthetic recorded logs for replay's tests, written with the session layer's own JSONL writer, and the
recorded logs of fixtures/harness/."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsh.runtime.llm import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    FinishStop,
    StreamChunk,
    TextBlock,
    TextDelta,
    encode_chunk,
)
from dsh.runtime.session import SessionId, SessionInfo, SpawnedBy, StoredEvent, SurfaceOp, write_jsonl

HARNESS = Path(__file__).resolve().parents[2] / "fixtures" / "harness"
PROVIDER = "deepseek-official"


def text_call(text: str, reason: FinishReason | None = None) -> list[StreamChunk]:
    """A one-text-block call: start, one delta, end, finish (stop unless given)."""
    return [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text=text),
        BlockEnd(index=0, block=TextBlock(text)),
        Finish(reason=reason or FinishStop()),
    ]


class LogBuilder:
    """Events appended in order (seq assigned), written as a JSONL log."""

    def __init__(
        self,
        id: str = "recorded-root",
        *,
        created_at: int = 0,
        parent: str | None = None,
        seed_length: int | None = None,
        spawned_by: SpawnedBy | None = None,
    ) -> None:
        self.info = SessionInfo(
            id=SessionId(id),
            created_at=created_at,
            parent_id=parent,
            seed_length=seed_length,
            spawned_by=spawned_by,
        )
        self.events: list[StoredEvent] = []

    def add(
        self, kind: str, data: dict[str, Any] | str, *, surface_op: SurfaceOp | None = None
    ) -> LogBuilder:
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        self.events.append(
            StoredEvent(type=kind, seq=len(self.events), time=0, data=text, surface_op=surface_op)
        )
        return self

    def chunks(self, turn: int, step: int, chunks: Sequence[StreamChunk]) -> LogBuilder:
        for chunk in chunks:
            self.add(
                "assistant/chunk", f'{{"turn":{turn},"step":{step},"chunk":{encode_chunk(chunk).decode()}}}'
            )
        return self

    def header(self, provider: str = PROVIDER) -> LogBuilder:
        return self.add(
            "request/header",
            {"header": {"config": {"provider": provider, "model": "m"}}, "reason": "initial"},
        )

    def step(self, turn: int, step: int, *calls: Sequence[StreamChunk]) -> LogBuilder:
        """A step whose model calls (attempts) are `calls`."""
        self.add("step/start", {"turn": turn, "step": step})
        for call in calls:
            self.chunks(turn, step, call)
        return self.add("step/end", {"turn": turn, "step": step})

    def turn(
        self, turn: int, *steps: Sequence[Sequence[StreamChunk]], provider: str = PROVIDER
    ) -> LogBuilder:
        """A turn: a header, then step k+1 made the calls `steps[k]`."""
        self.add("turn/start", {"turn": turn}).header(provider)
        for number, calls in enumerate(steps, 1):
            self.step(turn, number, *calls)
        return self.add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})

    def write(self, path: Path, *, pack: bool = True) -> Path:
        path.write_bytes(b"".join(write_jsonl(self.info, self.events, pack=pack)))
        return path
