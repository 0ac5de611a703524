"""A process that holds a session's log mid-turn, for the one-writer tests.

`python -m tests.runtime.session.lease_holder DB SESSION` opens the log, appends the first half of a turn, flushes,
prints `mid-turn`, waits for a line on stdin, appends the rest of the turn, flushes and prints `done`.
"""

from __future__ import annotations

import sys

import anyio
import anyio.to_thread

from dsh.runtime.session import SessionStore, open_log
from tests.strategies import TurnSpec, turn_events


async def hold(path: str, session: str) -> None:
    with SessionStore(path) as store:
        async with open_log(store, session, repair=False) as log:
            events = turn_events(1, log.next_seq, TurnSpec("go", ("a", "b", "c", "d"), (("bash", "ok"),)))
            half = len(events) // 2
            for event in events[:half]:
                log.append(event)
            await log.flush()
            print("mid-turn", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)
            for event in events[half:]:
                log.append(event)
            await log.flush()
    print("done", flush=True)


if __name__ == "__main__":
    anyio.run(hold, sys.argv[1], sys.argv[2])
