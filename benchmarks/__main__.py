"""Run every benchmark module of this package (`bench_*.py`) in name order; `python -m benchmarks NAME...` runs
only the named ones (e.g. `prompt` for bench_prompt). A module exposes `main() -> int` (0: within target).

The figures go to stdout, each benchmark's under `== bench_NAME`, and the last line lists each missed target (every
line a benchmark printed with `MISSED` in it, or, for one that returned non-zero without such a line, its name), or
says "all targets met". When stderr is a terminal, a bar on it names the benchmark running and counts those done (it
redraws twice a second, from a thread, to stay out of the figures' way); a redirected stderr gets nothing."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path
from typing import TextIO

from rich.console import Console

from dsh.runtime.host import count_progress


class _Watched:
    """stdout as it is, keeping each line written through it that says a target was MISSED."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._pending = ""
        self.missed: list[str] = []

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        self.missed += [line.strip() for line in lines if "MISSED" in line]
        return self._out.write(text)

    def flush(self) -> None:
        self._out.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self._out, name)


def summary(missed: list[str]) -> str:
    """The last line: each missed target, or that all were met."""
    return "missed: " + "; ".join(missed) if missed else "all targets met"


def main(argv: list[str]) -> int:
    names = sorted(
        info.name
        for info in pkgutil.iter_modules([str(Path(__file__).parent)])
        if info.name.startswith("bench_")
    )
    wanted = {f"bench_{name.removeprefix('bench_')}" for name in argv}
    unknown = wanted - set(names)
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(sorted(unknown))}; available: {', '.join(names)}",
            file=sys.stderr,
        )
        return 2
    chosen = [name for name in names if not wanted or name in wanted]
    console = Console(stderr=True)
    status = 0
    missed: list[str] = []
    real = sys.stdout
    with count_progress(console, refresh_per_second=2, disable=not console.is_terminal) as bar:
        task = bar.add_task("benchmarks", total=len(chosen))
        for name in chosen:
            bar.update(task, description=f"running {name}")
            print(f"== {name}", flush=True)
            watched = _Watched(real)
            sys.stdout = watched
            try:
                module = importlib.import_module(f"benchmarks.{name}")
                code = module.main()
            finally:
                sys.stdout = real
            status |= code
            missed += [f"{name}: {line}" for line in watched.missed]
            if code and not watched.missed:
                missed.append(f"{name}: a target (exit {code}; see its figures)")
            bar.advance(task)
    print(summary(missed), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
