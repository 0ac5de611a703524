"""`dsh sessions stats` on a large session: the figures of a 100,000-event session (turns of one tool call and one
streamed answer: mostly text deltas, as live sessions are) folded by `session_stats`, against reading the same
session through the store and folding it with the store's projection (`project(store.events(id))`), in the same
run, best of several. Target: stats <= 1.5x the projection read."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from dsh.runtime.session import Price, PriceTable, SessionStore, import_jsonl, project, session_stats

EVENTS = 100_000
RUNS = 5
TARGET = 1.5
DELTAS = 40  # text deltas per answer
PRICES = PriceTable(prices=(Price(provider="*", model="*", input=0.14, output=0.28, cache_read=0.0028),))


def _log(path: Path) -> int:
    """Write a JSONL log of about `EVENTS` events; return its event count."""
    lines = [json.dumps({"type": "session", "version": 0, "id": "big", "createdAt": 1, "delegationDepth": 0})]
    seq = 0
    time_ms = 1_000

    def add(kind: str, data: dict[str, Any], **envelope: Any) -> None:
        nonlocal seq, time_ms
        lines.append(json.dumps({"type": kind, "seq": seq, "time": time_ms, "data": data, **envelope}))
        seq += 1
        time_ms += 3

    turn = 0
    while seq < EVENTS - (DELTAS + 30):
        turn += 1
        add("turn/start", {"turn": turn})
        add("step/start", {"turn": turn, "step": 1})
        prompt = {"role": "user", "id": f"u{turn}", "content": [{"type": "text", "text": f"question {turn}"}]}
        add("user/message", {**prompt, "source": {"kind": "user"}}, surfaceOp="append")
        add("request/context", {"provider": "p", "model": "m"})
        call = {"type": "tool-call", "id": f"c{turn}", "name": "bash", "arguments": '{"command":"ls"}'}
        for chunk in (
            {"type": "block-start", "index": 0, "blockType": "tool-call"},
            {
                "type": "tool-call-delta",
                "index": 0,
                "id": f"c{turn}",
                "name": "bash",
                "argumentsDelta": call["arguments"],
            },
            {"type": "block-end", "index": 0, "block": call},
            {"type": "usage", "usage": {"inputTokens": 900, "outputTokens": 20, "cacheReadTokens": 4000}},
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ):
            add("assistant/chunk", {"turn": turn, "step": 1, "chunk": chunk})
        source = {"kind": "model", "provider": "p", "model": "m"}
        message = {"role": "assistant", "id": f"a{turn}", "content": [call], "source": source}
        add(
            "assistant/message",
            {"turn": turn, "step": 1, "message": message},
            surfaceOp="append",
            sourceEventSeqs=[],
        )
        add(
            "tool/call",
            {"turn": turn, "step": 1, "callId": f"c{turn}", "name": "bash", "arguments": call["arguments"]},
        )
        result = {
            "role": "user",
            "id": f"r{turn}",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": f"c{turn}",
                    "content": [{"type": "text", "text": "a b"}],
                }
            ],
            "source": {"kind": "tool", "callId": f"c{turn}"},
        }
        add(
            "tool/result",
            {"turn": turn, "step": 1, "message": result},
            surfaceOp="append",
            sourceEventSeqs=[seq - 1],
        )
        add("step/end", {"turn": turn, "step": 1})
        add("step/start", {"turn": turn, "step": 2})
        add("request/context", {"provider": "p", "model": "m"})
        add(
            "assistant/chunk",
            {"turn": turn, "step": 2, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}},
        )
        words = [f"word{i} " for i in range(DELTAS)]
        for word in words:
            add(
                "assistant/chunk",
                {"turn": turn, "step": 2, "chunk": {"type": "text-delta", "index": 0, "text": word}},
            )
        text = {"type": "text", "text": "".join(words)}
        for chunk in (
            {"type": "block-end", "index": 0, "block": text},
            {"type": "usage", "usage": {"inputTokens": 50, "outputTokens": 60, "cacheReadTokens": 4900}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ):
            add("assistant/chunk", {"turn": turn, "step": 2, "chunk": chunk})
        message = {"role": "assistant", "id": f"b{turn}", "content": [text], "source": source}
        add(
            "assistant/message",
            {"turn": turn, "step": 2, "message": message},
            surfaceOp="append",
            sourceEventSeqs=[],
        )
        add("step/end", {"turn": turn, "step": 2})
        add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    path.write_text("\n".join(lines) + "\n")
    return seq


def _best(action: Any) -> float:
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dsh-bench-stats-") as scratch:
        log = Path(scratch) / "big.jsonl"
        events = _log(log)
        with SessionStore(Path(scratch) / "s.db", synchronous="OFF") as store:
            session = import_jsonl(store, log).id
            projected = _best(lambda: project(store.events(session)))
            stats = _best(lambda: session_stats(store, session, prices=PRICES))
            figures = session_stats(store, session, prices=PRICES)
    ratio = stats / projected
    print(f"session: {events:,} events, {figures.turns:,} turns, {figures.model_calls:,} model calls")
    print(f"read + project (baseline): {projected * 1000:8.1f} ms")
    print(f"read + stats:              {stats * 1000:8.1f} ms")
    print(f"stats / projection: {ratio:.2f}x (target <= {TARGET}x)")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
