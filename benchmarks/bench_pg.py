"""The PostgreSQL store's speed, each figure a ratio against a baseline run beside it, on a throwaway server on
loopback (fsync on): group-commit appends against raw psycopg COPY per 1,000 rows into the same schema, fork of a
100,000-event session against a 100-event one, read+project against raw psycopg+msgspec decode, and 1, 2, 4 and 8
writer processes on as many sessions, aggregate events/s on PostgreSQL against SQLite on one file.

`python -m benchmarks pg` runs it; it needs the PostgreSQL server binaries (`$DSH_PG_BIN`, default
/usr/lib/postgresql/15/bin) and reports itself skipped without them.
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import anyio
import anyio.lowlevel
import anyio.to_thread
import msgspec
import psycopg

from dsh.runtime.session import (
    SessionStore,
    SessionStoreProtocol,
    StoredEvent,
    data_type,
    open_log,
    open_store,
    project,
)
from dsh.runtime.session.store._rows import event_row
from tests.pg_server import PG_BIN, PgServer

from .bench_session import _fork_seconds, _log_append, _median, _session_events, _turn

APPEND_EVENTS = 100_000
FORK_SIZES = (100, 100_000)
PROJECT_EVENTS = 100_000
WRITERS = (1, 2, 4, 8)
WRITER_EVENTS = int(os.environ.get("DSH_BENCH_WRITER_EVENTS", "10000"))
REPS = 3
_COPY = "COPY events (session_id, seq, type, time, data, surface_op, source_event_seqs, ignorable, extra) FROM STDIN"


def _fill(store: SessionStoreProtocol, session: str, count: int, url: str) -> None:
    """`count` events in whole turns, then ANALYZE: the planner's statistics as autovacuum would soon make them
    (fresh ones estimate a session of 100k rows as a handful and sort pages instead of walking the index)."""
    events = _session_events(count)
    store.append_events(session, [StoredEvent.from_event(e, seq=i, time=i) for i, e in enumerate(events)])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def bench_append(server: PgServer) -> float:
    ours: list[float] = []
    raw: list[float] = []
    bare: list[float] = []
    for _ in range(REPS):
        url = server.new_schema()
        with open_store(url) as store:
            session = store.create().id
            ours.append(anyio.run(_log_append, store, session, list(_turn(1, APPEND_EVENTS - 6))))
            twin = store.create().id  # the baseline writes the same rows, into the same schema and triggers
            rows = [(twin, *event_row(session, e)[1:]) for e in store.events(session)]
        with psycopg.connect(url, autocommit=True) as conn:
            gc.collect()
            start = time.perf_counter()
            for first in range(0, len(rows), 1000):
                with conn.transaction(), conn.cursor().copy(_COPY) as copy:
                    for row in rows[first : first + 1000]:
                        copy.write_row(row)
            raw.append(time.perf_counter() - start)
            conn.execute(
                "CREATE TABLE bare (session_id text, seq bigint, type text, time bigint, data text, "
                "surface_op text, source_event_seqs text, ignorable integer, extra text, PRIMARY KEY (session_id, seq))"
            )
            start = time.perf_counter()
            for first in range(0, len(rows), 1000):
                with conn.transaction(), conn.cursor().copy(_COPY.replace("events", "bare")) as copy:
                    for row in rows[first : first + 1000]:
                        copy.write_row(row)
            bare.append(time.perf_counter() - start)
    n = APPEND_EVENTS
    ours_rate, raw_rate, bare_rate = (n / statistics.median(t) for t in (ours, raw, bare))
    ratio = ours_rate / raw_rate
    print(
        f"append {n:,} chunk events: group commit {ours_rate:,.0f}/s, raw psycopg COPY/1000 rows into the same "
        f"schema {raw_rate:,.0f}/s -> ratio {ratio:.2f} (target >= 0.50); into a table without the store's "
        f"triggers {bare_rate:,.0f}/s -> ratio {ours_rate / bare_rate:.2f}"
    )
    return ratio


def bench_fork(server: PgServer) -> tuple[float, float]:
    costs: dict[int, float] = {}
    url = server.new_schema()
    with open_store(url) as store:
        for size in FORK_SIZES:
            session = store.create().id
            _fill(store, session, size, url)
            last = store.length(session) - 1
            store.fork(session, at=last)  # warm the plan and buffer caches before timing
            costs[size] = _median(partial(_fork_seconds, store, session, last), REPS)
    small, large = costs[FORK_SIZES[0]], costs[FORK_SIZES[1]]
    ratio = large / small
    print(
        f"fork {FORK_SIZES[1]:,} events: {large * 1e6:,.0f} µs, {FORK_SIZES[0]:,} events: {small * 1e6:,.0f} µs "
        f"-> ratio {ratio:.2f} (target <= 2)"
    )
    return ratio, large


def bench_project(server: PgServer) -> float:
    decoders = {kind: msgspec.json.Decoder(data_type(kind)) for kind in ("assistant/chunk", "user/message")}
    url = server.new_schema()
    with open_store(url) as store:
        session = store.create().id
        _fill(store, session, PROJECT_EVENTS, url)
        count = store.length(session)

        def ours() -> float:
            start = time.perf_counter()
            projection = project(store.events(session))
            assert projection.messages
            return time.perf_counter() - start

        def raw() -> float:
            with psycopg.connect(url) as conn:
                start = time.perf_counter()
                generic = msgspec.json.Decoder()
                for kind, data in conn.execute(
                    "SELECT type, data FROM events WHERE session_id = %s ORDER BY seq", (session,)
                ):
                    (decoders.get(kind) or generic).decode(data)
                return time.perf_counter() - start

        ours_rate, raw_rate = count / _median(ours, REPS), count / _median(raw, REPS)
    ratio = ours_rate / raw_rate
    print(
        f"read+project {count:,} events: {ours_rate:,.0f} events/s, raw psycopg+msgspec decode "
        f"{raw_rate:,.0f} events/s -> ratio {ratio:.2f}"
    )
    return ratio


def _writers(spec: str, count: int) -> float:
    """Aggregate events/s of `count` writer processes, each appending WRITER_EVENTS to its own session."""
    with open_store(spec) as store:
        sessions = [store.create().id for _ in range(count)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "benchmarks.bench_pg", "--writer", spec, session],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        for session in sessions
    ]
    for process in processes:  # every writer holds its lease and is ready before the clock starts
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line == "ready\n", line
    start = time.perf_counter()
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in processes:
        process.communicate(timeout=600)
        assert process.returncode == 0
    return count * WRITER_EVENTS / (time.perf_counter() - start)


async def _writer_main(spec: str, session: str) -> None:
    events = list(_turn(1, WRITER_EVENTS - 6))
    with open_store(spec) as store:
        async with open_log(store, session, repair=False) as log:
            print("ready", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)
            for i, event in enumerate(events):
                log.append(event)
                if i % 100 == 99:
                    await log.flush()  # a streamed reply made durable every 100 chunks
            await log.flush()


def bench_writers(server: PgServer, tmp: Path) -> None:
    for count in WRITERS:
        pg = _writers(server.new_schema(), count)
        db = tmp / f"writers-{count}.db"
        SessionStore(db).close()
        lite = _writers(str(db), count)
        print(
            f"{count} writer processes on {count} sessions, {WRITER_EVENTS:,} events each, flushed every 100: "
            f"PostgreSQL {pg:,.0f} events/s, SQLite one file {lite:,.0f} events/s -> ratio {pg / lite:.2f}"
        )


def main() -> int:
    if not (PG_BIN / "initdb").exists():
        print(f"skipped: no PostgreSQL server binaries in {PG_BIN} (set DSH_PG_BIN)")
        return 0
    server = PgServer(durable=True)
    try:
        with tempfile.TemporaryDirectory(prefix="dsh-bench-pg-") as folder:
            append = bench_append(server)
            fork_ratio, _ = bench_fork(server)
            bench_project(server)
            bench_writers(server, Path(folder))
    finally:
        server.stop()
    print(f"target append >= 0.5x: {'met' if append >= 0.5 else 'MISSED'} ({append:.2f}x)")
    print(f"target fork <= 2x: {'met' if fork_ratio <= 2 else 'MISSED'} ({fork_ratio:.2f}x)")
    return 0 if append >= 0.5 and fork_ratio <= 2 else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--writer"]:
        anyio.run(_writer_main, sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit(main())
