"""Replay script derivation speed: deriving the script of a synthetic 100,000-chunk JSONL log (1,000 calls of 100
chunks: 100 turns of 10 steps), against parsing the same file with msgspec alone, measured in the same run.

Measured, best of several runs each, on the log written one chunk per line and packed (runs of deltas in
`text-chunks` rows, as the original and `dsh sessions export` write it):
  * msgspec: `msgspec.json.Decoder().decode` of every line, nothing else (the floor);
  * reader: `dsh.runtime.session.read_jsonl` walking the events (header, envelopes, packed rows expanded, the log's
    rules checked), which derivation runs on;
  * derive: `derive_script(read_log(path))`, every chunk decoded strictly into dsh.runtime.llm's `StreamChunk`.
Figures: chunks/s of derive, and derive / msgspec, reader / msgspec, derive / reader.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from dsh.replay import derive_script, read_log
from dsh.runtime.llm import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishStop,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
    encode_chunk,
)
from dsh.runtime.session import SessionId, SessionInfo, StoredEvent, read_jsonl, write_jsonl

TURNS, STEPS, DELTAS = 100, 10, 96  # + block-start, block-end, usage, finish = 100 chunks a call
RUNS = 5
TARGET = 15.0  # derive / msgspec on the one-chunk-per-line log


def _events() -> Iterator[StoredEvent]:
    seq = 0

    def event(kind: str, data: str) -> StoredEvent:
        nonlocal seq
        seq += 1
        return StoredEvent(type=kind, seq=seq - 1, time=1_786_000_000_000 + seq, data=data)

    header = '{"header":{"config":{"provider":"deepseek-official","model":"deepseek-v4-flash"}},"reason":"initial"}'
    for turn in range(1, TURNS + 1):
        yield event("turn/start", f'{{"turn":{turn}}}')
        yield event("request/header", header)
        for step in range(1, STEPS + 1):
            yield event("step/start", f'{{"turn":{turn},"step":{step}}}')
            words = [f" word{turn}.{step}.{i}" for i in range(DELTAS)]
            chunks: list[StreamChunk] = [
                BlockStart(index=0, block_type="text"),
                *(TextDelta(index=0, text=word) for word in words),
                BlockEnd(index=0, block=TextBlock("".join(words))),
                UsageChunk(TokenUsage(input_tokens=3000, output_tokens=DELTAS, cache_read_tokens=2816)),
                Finish(reason=FinishStop()),
            ]
            for chunk in chunks:
                data = f'{{"turn":{turn},"step":{step},"chunk":{encode_chunk(chunk).decode()}}}'
                yield event("assistant/chunk", data)
            yield event("step/end", f'{{"turn":{turn},"step":{step}}}')
        yield event("turn/end", f'{{"turn":{turn},"reason":{{"kind":"completed"}}}}')


def write_log(path: Path, *, pack: bool) -> Path:
    info = SessionInfo(id=SessionId("bench"), created_at=0)
    with path.open("wb") as handle:
        for line in write_jsonl(info, _events(), pack=pack):
            handle.write(line)
    return path


def _best(run: Callable[[], int]) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(RUNS):
        started = time.perf_counter()
        count = run()
        best = min(best, time.perf_counter() - started)
    return best, count


def measure(path: Path) -> dict[str, float]:
    decoder = msgspec.json.Decoder()

    def bare() -> int:
        lines = 0
        with path.open("rb") as handle:
            for line in handle:
                decoder.decode(line)
                lines += 1
        return lines

    def reader() -> int:
        with path.open("rb") as handle:
            _, events = read_jsonl(handle, file=str(path))
            return sum(1 for _ in events)

    def derive() -> int:
        return sum(len(entry.chunks) for entry in derive_script(read_log(path)).entries)

    results: dict[str, float] = {}
    results["msgspec"], results["lines"] = _best(bare)
    results["reader"], results["events"] = _best(reader)
    results["derive"], results["chunks"] = _best(derive)
    return results


def main() -> int:
    print(f"synthetic log: {TURNS * STEPS} calls of {DELTAS + 4} chunks (best of {RUNS})")
    print(
        f"{'layout':>10} {'lines':>8} {'MB':>6} {'chunks/s':>10} {'derive/msgspec':>15} {'reader/msgspec':>15} {'derive/reader':>14}"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="dsh-bench-replay-") as folder:
        for pack in (False, True):
            path = write_log(Path(folder) / f"session-{pack}.jsonl", pack=pack)
            r = measure(path)
            assert r["chunks"] == TURNS * STEPS * (DELTAS + 4)
            ratio = r["derive"] / r["msgspec"]
            if not pack:
                worst = ratio
            print(
                f"{'packed' if pack else 'unpacked':>10} {int(r['lines']):>8} {path.stat().st_size / 1e6:>6.1f} "
                f"{r['chunks'] / r['derive']:>10,.0f} {ratio:>14.1f}x {r['reader'] / r['msgspec']:>14.1f}x "
                f"{r['derive'] / r['reader']:>13.2f}x"
            )
    print(
        "packed: msgspec parses one line per run of deltas and expands nothing, so its floor is far lower;\n"
        "  the reader expands every packed member into an event, as derivation needs."
    )
    within = worst < TARGET
    print(f"target derive/msgspec < {TARGET:.0f}x (unpacked): {'met' if within else 'MISSED'} ({worst:.1f}x)")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
