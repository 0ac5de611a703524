"""`dsh sessions show` of one large message is linear in its size: the message rendering of a 4 MiB text (many
short lines, and one long line) against four times that of a 1 MiB text, in the same run. Target: ratio <= 1.5
(quadratic would be about 4)."""

from __future__ import annotations

import io
import statistics
import time

from rich.console import Console

from dsh.runtime.cli.sessions_cmd import _render
from dsh.runtime.session import StoredEvent

__all__ = ["main"]


def _seconds(text: str) -> float:
    data = '{"content":[{"type":"text","text":%s}],"source":{"kind":"user"},"role":"user"}'
    import json

    event = StoredEvent(type="user/message", seq=1, time=0, data=data % json.dumps(text), surface_op="append")
    console = Console(file=io.StringIO(), width=100)
    start = time.perf_counter()
    _render(console, event, {})
    return time.perf_counter() - start


def main() -> int:
    ok = True
    for kind, unit in (("short lines", "a line of text here\n"), ("one line", "word ")):
        small = statistics.median(_seconds(unit * ((1 << 20) // len(unit))) for _ in range(3))
        large = statistics.median(_seconds(unit * ((4 << 20) // len(unit))) for _ in range(3))
        ratio = large / (4 * small)
        ok &= ratio <= 1.5
        print(
            f"show a message of {kind}: 1 MiB {small:.2f} s, 4 MiB {large:.2f} s -> ratio {ratio:.2f} (target <= 1.5)"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
