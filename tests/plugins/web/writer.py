"""A process that writes a session into a store as `dsh` would, slowly, for the live view's tests: it copies the
events of a recorded log into a new session, writes `head` events, prints the session id, waits for the file `go`
to exist, then writes the rest `gap_s` apart. STORE is a path or a PostgreSQL URL. Run as `python -m tests.plugins.web.writer STORE LOG GO HEAD GAP_S`."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dsh.runtime.session import open_store, read_jsonl

WAIT_S = 60.0
"""The longest the writer waits for `go` (a test that never says go must not leave it running)."""


def main(store_path: str, log: str, go: str, head: int, gap_s: float) -> None:
    with Path(log).open("rb") as handle:
        _, events = read_jsonl(handle)
        recorded = list(events)
    store = open_store(store_path)  # a path or a PostgreSQL URL
    with store:
        info = store.create(cwd="/workspace")
        store.append_events(info.id, recorded[:head])
        print(info.id, flush=True)  # once the head is in: a page opened now sees it
        deadline = time.monotonic() + WAIT_S
        while not Path(go).exists():
            if time.monotonic() > deadline:
                sys.exit("writer: nobody said go")
            time.sleep(0.02)
        for event in recorded[head:]:
            store.append_events(info.id, [event])
            time.sleep(gap_s)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
