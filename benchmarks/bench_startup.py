"""Start-up time of the `dsh` command: the median wall time of `dsh --version`, `dsh --help` and `dsh sessions list`
(an empty store in a scratch directory), each run as a fresh process with the same interpreter, against
`python -c pass` measured in the same run (the floor: the interpreter starting and stopping).

The console script is `runtime.cli:main`, run here as `python -c "from runtime.cli import main; main()"` so the
figures do not depend on where the script was installed. Figures: milliseconds and the ratio to the floor of each
command; the target is every ratio <= 3. For context (not a target), the same for the least a typer command can do:
a one-command typer app printing its `--help`, which every `dsh` command but `--version` pays at least."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 15
TARGET = 3.0
_DSH = "from runtime.cli import main; main()"
_TYPER_FLOOR = (
    "import typer\napp = typer.Typer(add_completion=False)\n"
    "@app.command()\ndef f(x: int = 1) -> None:\n    pass\n"
    "app(['--help'])"
)
COMMANDS: dict[str, list[str]] = {
    "dsh --version": ["--version"],
    "dsh --help": ["--help"],
    "dsh sessions list": ["sessions", "list"],
}


def _median(argv: list[str], env: dict[str, str]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dsh-bench-startup-") as scratch:
        env = {**os.environ, "XDG_DATA_HOME": str(Path(scratch) / "data"), "NO_COLOR": "1", "COLUMNS": "100"}
        env.pop("DSH_CONFIG", None)
        figures = {name: 0.0 for name in ("python -c pass", "typer floor", *COMMANDS)}
        # interleaved rounds, so a burst of load on the machine falls on every command alike
        for _ in range(2):
            figures["python -c pass"] += _median([sys.executable, "-c", "pass"], env)
            figures["typer floor"] += _median([sys.executable, "-c", _TYPER_FLOOR], env)
            for name, args in COMMANDS.items():
                figures[name] += _median([sys.executable, "-c", _DSH, *args], env)
    floor = figures["python -c pass"]
    print(f"  {'python -c pass':<20} {floor / 2 * 1000:7.1f} ms  (the floor)")
    typer_floor = figures["typer floor"]
    print(
        f"  {'typer floor':<20} {typer_floor / 2 * 1000:7.1f} ms  {typer_floor / floor:5.1f}x the floor"
        "  (a one-command typer app's --help: context, not a target)"
    )
    worst = 0.0
    for name in COMMANDS:
        ratio = figures[name] / floor
        worst = max(worst, ratio)
        print(f"  {name:<20} {figures[name] / 2 * 1000:7.1f} ms  {ratio:5.1f}x the floor")
    print(f"  worst ratio {worst:.1f}x (target <= {TARGET:.0f}x)")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
