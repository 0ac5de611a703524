"""Progress for long commands (importing a large log, replaying many scenarios, the benchmarks): rich bars on
stderr, drawn only when stderr is a terminal, so a pipe, a CI log or a `--json` reader never sees a bar or its escape
codes. Stdout, where a command's data goes, is never written to (when both are the same terminal, what the command
prints to stdout meanwhile is shown above the bar)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

__all__ = ["ByteProgress", "count_progress", "terminal_stderr"]


def terminal_stderr() -> Console | None:
    """A console on stderr when stderr is a terminal (where a bar can redraw itself in place), else None."""
    console = Console(stderr=True)
    return console if console.is_terminal else None


def _stdout_is_terminal() -> bool:
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty is not None and isatty())


def count_progress(console: Console, *, refresh_per_second: float = 10, disable: bool = False) -> Progress:
    """A bar over a count of items (scenarios, benchmarks): a spinner, what runs now (the task's description), the
    bar, done/total and the time elapsed. Stdout is shown above the bar only when it is a terminal too; redirected,
    it is left alone. The bar redraws from a thread `refresh_per_second` times a second; `disable` draws nothing
    (and starts no thread) while the caller still updates it."""
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        refresh_per_second=refresh_per_second,
        disable=disable,
        redirect_stdout=_stdout_is_terminal(),
        redirect_stderr=False,
    )


class ByteProgress:
    """A bar of bytes read out of `total`, for work that is often quick: it is drawn only once the work has run
    `delay` seconds (a small file never flickers a bar), redrawn at most every `redraw` bytes, and removed when
    the work ends. Use it as a context manager and call it with the bytes read so far."""

    def __init__(
        self,
        console: Console,
        description: str,
        total: int,
        *,
        delay: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._console = console
        self._description = description
        self._total = total
        self._delay = delay
        self._clock = clock
        self._redraw = max(1, total // 200)
        self._started = clock()
        self._shown = 0
        self._bar: tuple[Progress, TaskID] | None = None

    @property
    def drawn(self) -> bool:
        """Whether the bar has appeared (the work outlasted `delay`)."""
        return self._bar is not None

    def __call__(self, read: int) -> None:
        if read - self._shown < self._redraw and read < self._total:
            return
        if self._bar is None:
            if self._clock() - self._started < self._delay:
                return
            bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=self._console,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._bar = bar, bar.add_task(self._description, total=self._total, completed=read)
            bar.start()
        self._shown = read
        bar, task = self._bar
        bar.update(task, completed=read)

    def __enter__(self) -> ByteProgress:
        self._started = self._clock()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar[0].stop()
