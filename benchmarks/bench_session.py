"""Session log speed and scale, each figure a ratio against a baseline run beside it in the same process:
group-commit appends against raw sqlite3 (one transaction per 1,000 rows), the schema's next-seq trigger against the
same inserts without it, fork of a 100,000-event session against
a 100-event one, read+project against raw sqlite3+msgspec, and the memory and time of resuming a long chunk stream
against the projected messages and a bare read of the rows.

`python -m benchmarks session` runs it at a modest size; `DSH_BENCH_RESUME_CHUNKS=1000000` (or
`python -m benchmarks.bench_session --full`) resumes a 1,000,000-chunk session.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path

import anyio
import anyio.lowlevel
import msgspec

from dsh.runtime.llm import AssistantMessage, MessageId, ModelSource, TextBlock, TextDelta, UserMessage
from dsh.runtime.session import (
    PROJECTED_TYPES,
    AssistantChunk,
    AssistantChunkData,
    AssistantMessageData,
    AssistantMessageEvent,
    Event,
    SessionId,
    SessionStore,
    SessionStoreProtocol,
    StepData,
    StepEnd,
    StepStart,
    StoredEvent,
    TurnEnd,
    TurnEndData,
    TurnEndReason,
    TurnStart,
    TurnStartData,
    UserMessageEvent,
    data_type,
    load_state,
    open_log,
    project,
)
from dsh.runtime.session.store._rows import event_row
from dsh.runtime.session.store.sqlite import GUARDS

APPEND_EVENTS = 100_000
FORK_SIZES = (100, 100_000)
PROJECT_EVENTS = 100_000
RESUME_CHUNKS = int(os.environ.get("DSH_BENCH_RESUME_CHUNKS", "200000"))
REPS = 5
INSERT = (
    "INSERT INTO events (session_id, seq, type, time, data, surface_op, source_event_seqs, ignorable, extra) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _median(run: Callable[[], float], reps: int = REPS) -> float:
    times = []
    for _ in range(reps):
        gc.collect()
        times.append(run())
    return statistics.median(times)


def _turn(turn: int, chunks: int, text: str = "tok ") -> Iterator[Event]:
    """A realistic turn: a prompt, a long text stream, the assembled message, a closed turn."""
    yield TurnStart(data=TurnStartData(turn=turn))
    yield StepStart(data=StepData(turn=turn, step=1))
    yield UserMessageEvent(
        data=UserMessage(id=MessageId(f"u{turn}"), content=(TextBlock("go"),)),
        surface_op="append",
    )
    for _ in range(chunks):
        yield AssistantChunk(data=AssistantChunkData(turn=turn, step=1, chunk=TextDelta(index=0, text=text)))
    yield AssistantMessageEvent(
        data=AssistantMessageData(
            turn=turn,
            step=1,
            message=AssistantMessage(
                id=MessageId(f"a{turn}"),
                source=ModelSource(provider="p", model="m"),
                content=(TextBlock(text * chunks),),
            ),
        ),
        surface_op="append",
    )
    yield StepEnd(data=StepData(turn=turn, step=1))
    yield TurnEnd(data=TurnEndData(turn=turn, reason=TurnEndReason(kind="completed")))


def _session_events(total: int, per_turn: int = 200) -> list[Event]:
    """Whole turns of `per_turn + 6` events, `total` events in all (rounded up to a whole turn)."""
    per_turn = min(per_turn, total - 6)
    events: list[Event] = []
    turn = 0
    while len(events) < total:
        turn += 1
        events.extend(_turn(turn, per_turn))
    return events


def _fill(store: SessionStore, session: str, events: list[Event]) -> None:
    rows = [event_row(session, StoredEvent.from_event(e, seq=i, time=i)) for i, e in enumerate(events)]
    conn = store.connect()
    store.insert_rows(conn, rows)
    conn.close()


async def _log_append(store: SessionStoreProtocol, session: str, events: list[Event]) -> float:
    """Seconds to append `events` through the log, yielding every 100 as a stream does (both stores' benchmark)."""
    async with open_log(store, session, repair=False) as log:
        gc.collect()
        start = time.perf_counter()
        for i, event in enumerate(events):
            log.append(event)
            if i % 100 == 99:  # a stream yields between chunks; the writer commits meanwhile
                await anyio.lowlevel.checkpoint()
        await log.flush()
        return time.perf_counter() - start


def _raw_insert(conn: sqlite3.Connection, rows: Sequence[tuple[object, ...]]) -> float:
    """Seconds to insert `rows` with plain sqlite3, one transaction per 1,000 rows: the append baselines."""
    gc.collect()
    start = time.perf_counter()
    for first in range(0, len(rows), 1000):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, rows[first : first + 1000])
        conn.execute("COMMIT")
    return time.perf_counter() - start


def _fork_seconds(store: SessionStoreProtocol, session: str, at: int) -> float:
    """Seconds per fork of `session` at `at`, over 50 forks (both stores' benchmark)."""
    start = time.perf_counter()
    for _ in range(50):
        store.fork(session, at=at)
    return (time.perf_counter() - start) / 50


def bench_append(tmp: Path) -> float:
    """The log's group commit (through the schema's triggers: next seq, and the rows' shape) against raw sqlite3
    inserts into the same tables, with the same triggers and with none (the CHECKs' whole cost counted against us);
    the lower ratio is the figure."""
    events = [e for e in _turn(1, APPEND_EVENTS - 6)]
    ours: list[float] = []
    raw: dict[bool, list[float]] = {True: [], False: []}
    for rep in range(REPS):
        with SessionStore(tmp / f"append-{rep}.db") as store:
            session = store.create().id
            ours.append(anyio.run(_log_append, store, session, events))
            rows = [(f"raw-{rep}", *row[1:]) for row in _rows_of(store, session)]
        for guarded in (True, False):
            with SessionStore(tmp / f"raw-{rep}-{guarded}.db") as baseline:  # the same schema and pragmas
                baseline.create(session_id=SessionId(f"raw-{rep}"))
                conn = baseline.connect()
                if not guarded:
                    for trigger in GUARDS:
                        conn.execute(f"DROP TRIGGER {trigger}")
                raw[guarded].append(_raw_insert(conn, rows))
                conn.close()
    n = len(events)
    ours_rate = n / statistics.median(ours)
    ratios = []
    for guarded, label in ((True, "with the same triggers"), (False, "into the bare tables")):
        raw_rate = n / statistics.median(raw[guarded])
        ratios.append(ours_rate / raw_rate)
        print(
            f"append {n:,} chunk events: group commit {ours_rate:,.0f}/s, raw sqlite3 txn/1000 rows {label} "
            f"{raw_rate:,.0f}/s -> ratio {ratios[-1]:.2f} (target >= 0.50)"
        )
    return min(ratios)


def bench_guard(tmp: Path) -> float:
    """What the schema's guards (the next-seq and row-shape triggers) cost a writer: raw inserts (one transaction per
    1,000 rows) into the store's schema against the same schema with those triggers dropped."""
    rows = [
        event_row("g", StoredEvent.from_event(e, seq=i, time=i))
        for i, e in enumerate(_turn(1, APPEND_EVENTS - 6))
    ]
    timings: dict[bool, list[float]] = {True: [], False: []}
    for rep in range(REPS):
        for guarded in (True, False):
            with SessionStore(tmp / f"guard-{rep}-{guarded}.db") as store:
                store.create(session_id=SessionId("g"))
                conn = store.connect()
                if not guarded:
                    for trigger in GUARDS:
                        conn.execute(f"DROP TRIGGER {trigger}")
                timings[guarded].append(_raw_insert(conn, rows))
                conn.close()
    ratio = statistics.median(timings[False]) / statistics.median(timings[True])
    print(
        f"next-seq and row-shape triggers: raw insert {len(rows) / statistics.median(timings[True]):,.0f}/s with it, "
        f"{len(rows) / statistics.median(timings[False]):,.0f}/s without -> ratio {ratio:.2f} (informational)"
    )
    return ratio


def _rows_of(store: SessionStore, session: str) -> list[tuple[object, ...]]:
    return [event_row(session, e) for e in store.events(session)]


def bench_fork(tmp: Path) -> tuple[float, float]:
    costs: dict[int, float] = {}
    with SessionStore(tmp / "fork.db") as store:
        for size in FORK_SIZES:
            session = store.create().id
            _fill(store, session, _session_events(size))
            last = store.length(session) - 1
            store.fork(session, at=last)  # warm the page cache and statement cache before timing
            costs[size] = _median(partial(_fork_seconds, store, session, last))
    small, large = costs[FORK_SIZES[0]], costs[FORK_SIZES[1]]
    ratio = large / small
    print(
        f"fork {FORK_SIZES[1]:,} events: {large * 1e6:,.0f} µs, {FORK_SIZES[0]:,} events: {small * 1e6:,.0f} µs "
        f"-> ratio {ratio:.2f} (target <= 2, and under 1 ms)"
    )
    return ratio, large


def bench_project(tmp: Path) -> tuple[float, float]:
    """Two figures. Every row: the full log read through the store (every event materialised with its envelope)
    and projected, against raw sqlite3 reading (type, data) and decoding every payload typed. As the runtime reads
    it (resume, `sessions show`): only the types a projection folds, filtered in SQL, against raw sqlite3 reading
    and typed-decoding those same rows."""
    decoders = {kind: msgspec.json.Decoder(data_type(kind)) for kind in (*PROJECTED_TYPES, "assistant/chunk")}
    projected = tuple(sorted(PROJECTED_TYPES))
    with SessionStore(tmp / "project.db") as store:
        session = store.create().id
        _fill(store, session, _session_events(PROJECT_EVENTS))

        def ours(types: tuple[str, ...] | None) -> float:
            start = time.perf_counter()
            projection = project(store.events(session, types=types))
            assert projection.messages
            return time.perf_counter() - start

        def raw(types: tuple[str, ...] | None) -> float:
            conn = sqlite3.connect(store.path)
            where = "" if types is None else f" AND type IN ({', '.join('?' * len(types))})"
            start = time.perf_counter()
            generic = msgspec.json.Decoder()
            for kind, data in conn.execute(
                f"SELECT type, data FROM events WHERE session_id = ?{where} ORDER BY seq",
                (session, *(types or ())),
            ):
                (decoders.get(kind) or generic).decode(data)
            elapsed = time.perf_counter() - start
            conn.close()
            return elapsed

        ratios = []
        for label, types in (("every row", None), ("projected types", projected)):
            ours_rate = PROJECT_EVENTS / _median(lambda types=types: ours(types))
            raw_rate = PROJECT_EVENTS / _median(lambda types=types: raw(types))
            ratio = ours_rate / raw_rate
            ratios.append(ratio)
            print(
                f"read+project {PROJECT_EVENTS:,} events ({label}): {ours_rate:,.0f} events/s, raw sqlite3+typed "
                f"msgspec decode of the same rows {raw_rate:,.0f} events/s -> ratio {ratio:.2f} (target >= 0.80)"
            )
    return ratios[0], ratios[1]


def bench_resume(tmp: Path) -> float:
    with SessionStore(tmp / "resume.db", synchronous="OFF") as store:
        session = store.create().id
        conn = store.connect()
        batch: list[tuple[object, ...]] = []
        for seq, event in enumerate(_turn(1, RESUME_CHUNKS, text="token ")):
            if isinstance(event, TurnEnd):
                break  # the stream was cut: the last turn is open, so resume must repair it
            batch.append(event_row(session, StoredEvent.from_event(event, seq=seq, time=seq)))
            if len(batch) == 20_000:
                store.insert_rows(conn, batch)  # type: ignore[arg-type]  # rows from event_row
                batch = []
        store.insert_rows(conn, batch)  # type: ignore[arg-type]  # rows from event_row
        conn.close()
        gc.collect()

        start = time.perf_counter()
        bare = sqlite3.connect(store.path)
        rows = 0
        for _ in bare.execute("SELECT * FROM events WHERE session_id = ? ORDER BY seq", (session,)):
            rows += 1
        bare.close()
        bare_time = time.perf_counter() - start

        gc.collect()
        tracemalloc.start()
        start = time.perf_counter()
        state = load_state(store, session)
        projection = project(store.events(session, types=PROJECTED_TYPES))
        open_time = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert state.open_turn == 1
    size = projection.message_bytes()
    ratio = peak / size
    print(
        f"resume {rows:,} events ({RESUME_CHUNKS:,} chunks): peak {peak / 1e6:.1f} MB for {size / 1e6:.1f} MB of "
        f"projected messages -> ratio {ratio:.2f} (target <= 3); open {open_time:.2f} s against a bare read of the "
        f"rows {bare_time:.2f} s -> ratio {open_time / bare_time:.2f}"
    )
    return ratio


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dsh-bench-session-") as folder:
        tmp = Path(folder)
        append = bench_append(tmp)
        bench_guard(tmp)
        fork_ratio, fork_cost = bench_fork(tmp)
        bench_project(tmp)
        memory = bench_resume(tmp)
    targets = [
        (f"append >= 0.5x ({append:.2f}x)", append >= 0.5),
        (f"fork <= 2x ({fork_ratio:.2f}x)", fork_ratio <= 2),
        (f"fork < 1 ms ({fork_cost * 1000:.3f} ms)", fork_cost < 1e-3),
        (f"resume memory <= 3x ({memory:.2f}x)", memory <= 3),
    ]
    for said, met in targets:
        print(f"target {said}: {'met' if met else 'MISSED'}")
    return 0 if all(met for _, met in targets) else 1


if __name__ == "__main__":
    if "--full" in sys.argv[1:]:
        RESUME_CHUNKS = 1_000_000
    sys.exit(main())
