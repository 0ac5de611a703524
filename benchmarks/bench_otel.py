"""What live OpenTelemetry export costs the agent loop: bench_replay_loop's 50-turn recording re-run through the full
loop with the default replay deployment, and again with the `otel` plugin added, exporting to an OTLP/HTTP receiver
in another process on 127.0.0.1 (as a collector would be), alternately, best of several each, in the same run.

Reported: each run's CPU time per step (every thread of the process, the turns and the unloading that sends the
last spans), the loop's own overhead per step (the run without export, less iterating the recorded chunks bare),
what export adds per step, and that as a share of the loop's overhead. Target: <= 5%."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from dsh.plugins.otel import OtelConfig
from dsh.plugins.otel import plugin as otel_plugin
from dsh.replay import REPLAY, load_scenario, read_log, recorded_turns
from dsh.replay.driver._scenario import replay_deployment
from dsh.runtime.agent import AGENTS, AgentOptions
from dsh.runtime.kernel import Context, Deployment, PluginEntry, load_deployment_into
from dsh.runtime.session import STORE, CountingIds, FixedClock, SessionStore

from .bench_replay_loop import _author, _bare

RUNS = 8
TARGET = 0.05

_RECEIVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


async def _turns(directory: Path, endpoint: str | None) -> tuple[float, float]:
    """CPU seconds of every recorded turn on the loop's own thread (the hot path), and of this whole process over
    the turns and the unloading after them (every thread: the store's writer, and with `endpoint` the otel worker and
    the SDK's exporter thread, which sends the last spans as the plugin unloads); the otel plugin exports to
    `endpoint` when given. CPU time, not wall time: on a shared machine the wall clock measures the neighbours."""
    scenario = load_scenario(directory)
    inputs = [turn.inputs[0].content for turn in recorded_turns(read_log(scenario.log))]
    deployment = replay_deployment(scenario)
    if endpoint is not None:
        entry = PluginEntry("otel", "otel", otel_plugin, OtelConfig(endpoint=endpoint), None)
        deployment = Deployment(
            deployment.path, (*deployment.plugins, entry), deployment.model, deployment.provider
        )
    with tempfile.TemporaryDirectory(prefix="dsh-bench-otel-") as scratch:
        ctx = Context()
        store = SessionStore(
            Path(scratch) / "s.db", clock=FixedClock(0, 1), ids=CountingIds(), synchronous="OFF"
        )
        with store:
            ctx.provide(STORE, store)
            loaded = load_deployment_into(ctx, deployment)
            options = AgentOptions(provider="scripted", model="scripted", cwd=Path(scratch))
            async with ctx.get(AGENTS).create(options) as agent:
                start, loop_start = time.process_time(), time.thread_time()
                for blocks in inputs:
                    outcome = await agent.run(blocks)
                    assert outcome.kind == "completed", outcome
                on_loop = time.thread_time() - loop_start
            ctx.get(REPLAY).assert_consumed()
            for plugin in reversed(loaded):
                plugin.unload()
            in_process = time.process_time() - start
            ctx.dispose()
    return on_loop, in_process


def main() -> int:
    receiver = subprocess.Popen(
        [sys.executable, "-c", _RECEIVER], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert receiver.stdout is not None
        port = int(receiver.stdout.readline())
        endpoint = f"http://127.0.0.1:{port}/v1/traces"
        with tempfile.TemporaryDirectory(prefix="dsh-bench-otel-") as scratch:
            directory = _author(Path(scratch))
            bare, steps, _chunks = _bare(directory)
            anyio.run(_turns, directory, None)  # warm-up: imports and caches, for neither side's clock
            anyio.run(_turns, directory, endpoint)
            plain, exported = [float("inf")] * 2, [float("inf")] * 2
            for run in range(RUNS):  # alternate, each going first in turn, so both see the same machine
                for target in (None, endpoint) if run % 2 == 0 else (endpoint, None):
                    took = anyio.run(_turns, directory, target)
                    best = plain if target is None else exported
                    best[:] = [min(a, b) for a, b in zip(best, took, strict=True)]
    finally:
        receiver.terminate()
        receiver.wait(timeout=10)
    per_step = [value / steps * 1000 for value in (*plain, *exported)]
    loop_plain, process_plain, loop_exported, process_exported = per_step
    overhead = loop_plain - bare / steps * 1000
    added = loop_exported - loop_plain
    share = added / overhead
    print(f"re-run of a {steps}-step recording; best of {RUNS} each; CPU ms per step")
    print(f"  loop thread:   {loop_plain:.3f} without export (its overhead), {loop_exported:.3f} with")
    print(
        f"  whole process: {process_plain:.3f} without export, {process_exported:.3f} with (worker, encoding, HTTP)"
    )
    print(
        f"  export adds {added * 1000:+.1f} us/step on the loop: {share:+.1%} of its overhead (target <= {TARGET:.0%})"
    )
    print(
        f"  and {(process_exported - process_plain) * 1000:+.1f} us/step of CPU off the loop, on other threads"
    )
    return 0 if share <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
