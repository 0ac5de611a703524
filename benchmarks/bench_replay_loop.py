"""The agent loop's overhead under replay: a 50-turn recorded session (100 steps: a todo_write call and a
40-word answer per turn; authored replies stream each block in two deltas, 6 chunks a step) driven through the full loop with the default replay deployment (prompt assembly and
render, the compaction meter, the replay adapter, every chunk appended to the SQLite log with group commit and
flushed at the loop's barriers, tool execution), against iterating the same recorded chunks bare, in the same run.

Reported: the loop's time per step, the bare iteration per step, the overhead per step (their difference) against
the 1 ms target, and the ratio. Loading the deployment and deriving the script happen before the clock starts."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import anyio

from dsh.replay import REPLAY, load_recording, load_scenario, read_log, record, recorded_turns
from dsh.replay.driver._scenario import replay_deployment
from dsh.runtime.agent import AGENTS, AgentOptions
from dsh.runtime.kernel import Context, load_deployment_into
from dsh.runtime.session import STORE, CountingIds, FixedClock, SessionStore

TURNS = 50
DELTA_WORDS = 40
RUNS = 5
TARGET_MS = 1.0


def _author(directory: Path) -> Path:
    """A scenario whose recording is made by the real loop against hand-written replies."""
    inputs = [f"Plan and answer question {n}." for n in range(TURNS)]
    replies = []
    for n in range(TURNS):
        todos = [{"content": f"answer question {n}", "status": "in_progress"}]
        replies.append({"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]})
        replies.append({"text": " ".join(f"word{n}-{i}" for i in range(DELTA_WORDS))})
    (directory / "scenario.yml").write_text(json.dumps({"description": "loop benchmark", "inputs": inputs}))
    (directory / "replies.yml").write_text(json.dumps({"replies": replies}))
    scenario = load_scenario(directory)
    logs = anyio.run(lambda: record(scenario, replies=directory / "replies.yml"))
    (directory / "session.jsonl").write_bytes(logs[0][1])
    return directory


def _bare(directory: Path) -> tuple[float, int, int]:
    """Seconds to iterate every recorded chunk once (the script derived beforehand), steps, chunks."""
    entries = load_recording(directory).root.entries
    chunks = sum(len(entry.chunks) for entry in entries)
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        for _ in range(100):
            for entry in entries:
                for _chunk in entry.chunks:
                    pass
        best = min(best, (time.perf_counter() - start) / 100)
    return best, len(entries), chunks


async def _turns(directory: Path) -> float:
    """Seconds the loop takes for every recorded turn: the deployment is loaded and the script derived before the
    clock starts (those are set-up, measured by bench_replay_script), the store is a scratch one as in `dsh replay`."""
    scenario = load_scenario(directory)
    inputs = [turn.inputs[0].content for turn in recorded_turns(read_log(scenario.log))]
    with tempfile.TemporaryDirectory(prefix="dsh-bench-run-") as scratch:
        ctx = Context()
        store = SessionStore(
            Path(scratch) / "s.db", clock=FixedClock(0, 1), ids=CountingIds(), synchronous="OFF"
        )
        with store:
            ctx.provide(STORE, store)
            loaded = load_deployment_into(ctx, replay_deployment(scenario))
            options = AgentOptions(provider="scripted", model="scripted", cwd=Path(scratch))
            async with ctx.get(AGENTS).create(options) as agent:
                start = time.perf_counter()
                for blocks in inputs:
                    outcome = await agent.run(blocks)
                    assert outcome.kind == "completed", outcome
                elapsed = time.perf_counter() - start
            ctx.get(REPLAY).assert_consumed()
            for plugin in reversed(loaded):
                plugin.unload()
            ctx.dispose()
    return elapsed


def _loop(directory: Path) -> float:
    return min(anyio.run(_turns, directory) for _ in range(RUNS))


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dsh-bench-loop-") as scratch:
        directory = _author(Path(scratch))
        bare, steps, chunks = _bare(directory)
        loop = _loop(directory)
    per_step = loop / steps * 1000
    bare_step = bare / steps * 1000
    overhead = per_step - bare_step
    print(f"re-run of a {TURNS}-turn recording: {steps} steps, {chunks:,} chunks; best of {RUNS}")
    print(f"  full loop       {loop * 1000:9.1f} ms  {per_step:8.3f} ms/step")
    print(f"  bare iteration  {bare * 1000:9.3f} ms  {bare_step * 1000:8.3f} us/step")
    print(f"  overhead        {overhead:8.3f} ms/step  ({per_step / bare_step:,.0f}x the bare iteration)")
    within = overhead < TARGET_MS
    print(f"target < {TARGET_MS:.0f} ms of loop overhead per step: {'met' if within else 'MISSED'}")
    return 0 if within else 1


if __name__ == "__main__":
    raise SystemExit(main())
