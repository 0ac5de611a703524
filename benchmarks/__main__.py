"""Run every benchmark module of the package in turn (`uv run --locked --extra dev python -m benchmarks [name...]`)."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import benchmarks


def main(argv: list[str]) -> None:
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if not m.name.startswith("_"))
    chosen = [n for n in names if not argv or n in argv]
    unknown = sorted(set(argv) - set(names))
    if unknown:
        raise SystemExit(f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(names)}")
    for name in chosen:
        print(f"== benchmarks.{name}", flush=True)
        importlib.import_module(f"benchmarks.{name}").main()


if __name__ == "__main__":
    main(sys.argv[1:])
