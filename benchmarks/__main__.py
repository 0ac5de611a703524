"""Run every benchmark module of this package (`bench_*.py`) in name order; `python -m benchmarks NAME...` runs
only the named ones (e.g. `prompt` for bench_prompt). A module exposes `main() -> int` (0: within target)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


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
    status = 0
    for name in names:
        if wanted and name not in wanted:
            continue
        print(f"== {name}", flush=True)
        module = importlib.import_module(f"benchmarks.{name}")
        status |= module.main()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
