"""Wire replay's cost: every scenario of fixtures/ re-run through the deployment's real llm_openai adapter and the
local chat-completions server (`rerun(scenario, wire=True)`), against the same scenarios replayed from their chunks
(`rerun(scenario)`), in this process with every import already done, alternating, best of RUNS. The cost is this
process's CPU time, the server's thread included (wall time is printed beside it): on a shared machine other
processes' load would otherwise decide the ratio.

Target: wire replay costs at most 2x chunk replay."""

from __future__ import annotations

import time
from pathlib import Path

import anyio

from dsh.replay import Scenario, discover, rerun

FIXTURES = Path(__file__).parents[1] / "fixtures"
RUNS = 3
TARGET = 2.0


def _replay_all(scenarios: list[Scenario], *, wire: bool) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for scenario in scenarios:
        result = anyio.run(lambda: rerun(scenario, wire=wire))  # noqa: B023  # run at once, in this iteration
        if result.divergence is not None:
            raise SystemExit(
                f"{scenario.name} diverged ({'wire' if wire else 'chunks'}): {result.divergence}"
            )
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> int:
    scenarios = discover(FIXTURES)
    _replay_all(scenarios, wire=True)  # warm: imports, httpx, the SSL context
    chunks: list[tuple[float, float]] = []
    wire: list[tuple[float, float]] = []
    for _ in range(RUNS):
        chunks.append(_replay_all(scenarios, wire=False))
        wire.append(_replay_all(scenarios, wire=True))
    chunk_cpu, chunk_wall = min(chunks)
    wire_cpu, wire_wall = min(wire)
    ratio = wire_cpu / chunk_cpu
    print(f"{len(scenarios)} scenarios (fixtures/); best of {RUNS}")
    print(f"  chunk replay   {chunk_cpu * 1000:8.0f} ms CPU  ({chunk_wall * 1000:.0f} ms wall)")
    print(
        f"  wire replay    {wire_cpu * 1000:8.0f} ms CPU  ({wire_wall * 1000:.0f} ms wall)  "
        f"{ratio:.2f}x chunk replay ({wire_wall / chunk_wall:.2f}x wall)"
    )
    met = ratio <= TARGET
    print(f"target wire <= {TARGET}x chunk replay: {'met' if met else 'MISSED'}")
    return 0 if met else 1
