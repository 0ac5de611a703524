"""A writer process for the crash and concurrency tests: appends a chunk stream to one session of a store.

`python -m tests.runtime.session.writer_process STORE SESSION COUNT FLUSH_EVERY` (STORE: a file or a URL) appends a turn/start, step/start and a
prompt, then COUNT text chunks (COUNT 0 = until killed), flushing every FLUSH_EVERY chunks and printing
`durable N` after each flush. With a fifth argument `hold` it then keeps the session's lease until its stdin closes.
"""

from __future__ import annotations

import sys

import anyio
import anyio.to_thread

from dsh.runtime.llm import TextDelta
from dsh.runtime.session import (
    AssistantChunk,
    AssistantChunkData,
    StepData,
    StepStart,
    TurnStart,
    TurnStartData,
    open_log,
    open_store,
)
from tests.strategies import TurnSpec, turn_events


async def write(path: str, session: str, count: int, flush_every: int, hold: bool) -> None:
    with open_store(path) as store:
        async with open_log(store, session, repair=False) as log:
            print(f"writing {session}", flush=True)
            log.append(TurnStart(data=TurnStartData(turn=1)))
            log.append(StepStart(data=StepData(turn=1, step=1)))
            log.append(turn_events(1, 2, TurnSpec("go", (), ()))[2])
            i = 0
            while count == 0 or i < count:
                chunk = TextDelta(index=0, text=f"{session}:{i}")
                log.append(AssistantChunk(data=AssistantChunkData(turn=1, step=1, chunk=chunk)))
                i += 1
                if i % flush_every == 0:
                    await log.flush()
                    print(f"durable {log.durable_seq}", flush=True)
            if hold:
                await log.flush()
                print("holding", flush=True)
                await anyio.to_thread.run_sync(sys.stdin.read)


if __name__ == "__main__":
    db, session_id, total, every = sys.argv[1:5]
    anyio.run(write, db, session_id, int(total), int(every), sys.argv[5:] == ["hold"])
