"""`RETRY_CLOCK`: what the retry plugin waits on before each new attempt. Unprovided, it waits real time
(`REAL_TIME`); a host that runs where time is not real (a replay, a test) provides a clock of its own, so the wait
is decided and logged as always (`llm/retry`'s `delayMs`) but taken on that clock instead of slept."""

from __future__ import annotations

from typing import Protocol

import anyio

from dsh.runtime.kernel import ServiceKey

__all__ = ["REAL_TIME", "RETRY_CLOCK", "RealTime", "RetryClock"]


class RetryClock(Protocol):
    """Waits before a retry."""

    async def wait(self, ms: int) -> None:
        """Return once `ms` milliseconds have passed on this clock; cancellable like any await."""
        ...


class RealTime:
    """The wall clock: `wait` sleeps."""

    async def wait(self, ms: int) -> None:
        await anyio.sleep(ms / 1000)


REAL_TIME = RealTime()

RETRY_CLOCK = ServiceKey[RetryClock]("retry/clock")
"""The clock retry waits on, looked up in the failed agent's context at each retry (so a scope may provide its own);
`REAL_TIME` when nothing provides it."""
