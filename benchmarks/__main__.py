"""Run every benchmark module of this package (`bench_*.py`) in name order; `python -m benchmarks NAME...` runs
only the named ones (e.g. `prompt` for bench_prompt). A module exposes `main() -> int` (0: within target).

The figures go to stdout, each benchmark's under `== bench_NAME`. When stderr is a terminal, a bar on it names the
benchmark running and counts those done (it redraws twice a second, from a thread, to stay out of the figures'
way); a redirected stderr gets nothing."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

from rich.console import Console

from dsh.runtime.host import count_progress


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
    with count_progress(console, refresh_per_second=2, disable=not console.is_terminal) as bar:
        task = bar.add_task("benchmarks", total=len(chosen))
        for name in chosen:
            bar.update(task, description=f"running {name}")
            print(f"== {name}", flush=True)
            module = importlib.import_module(f"benchmarks.{name}")
            status |= module.main()
            bar.advance(task)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
