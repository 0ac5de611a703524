"""Start-up time of the `dsh` command: the median wall time of `dsh --version`, `dsh --help` and `dsh sessions list`
(an empty store in a scratch directory), each run as a fresh process with the same interpreter, against
`python -c pass` measured in the same run (the floor: the interpreter starting and stopping).

The console script is `dsh.runtime.cli:main`, run here as `python -c "from dsh.runtime.cli import main; main()"` so the
figures do not depend on where the script was installed. Figures: milliseconds and the ratio to the floor of each
command; the target is every ratio <= 3. For context (not a target), the same for the least a typer command can do:
a one-command typer app printing its `--help`, which a `dsh` command that goes through typer pays at least.

Every command runs once before it is timed, so the figures are those of an installed `dsh` (its bytecode compiled,
as pip or `uv sync --compile-bytecode` leaves it): the bytecode is written to a scratch `PYTHONPYCACHEPREFIX`, and
`PYTHONDONTWRITEBYTECODE` is dropped, else every run would compile every module it imports from source. That first
`dsh sessions list` also creates the empty store the timed ones read. `dsh sessions list` is timed once more on a
store holding 1,000 sessions, one in ten with 20 events (`--store FILE`, stdout piped and COLUMNS unset, as a
script reading it runs it), under the same
target: the list a user with history runs.

Also, for context (no target): what dsh's pytest plugin costs a project that names no scenario root, which every
pytest run where dsh is installed loads through its `pytest11` entry point: `pytest` on a one-test project with
the plugin (inert) against `pytest -p no:dsh`, the same run."""

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
_DSH = "from dsh.runtime.cli import main; main()"
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
SESSIONS = 1_000
FULL = f"sessions list ({SESSIONS:,})"
"""The name of the list of a store with `SESSIONS` sessions (its store is made in the scratch directory)."""


def _full_store(path: Path) -> None:
    """A store with `SESSIONS` sessions, one in ten with 20 events."""
    from dsh.runtime.session import SessionStore, StoredEvent

    events = [StoredEvent(type="note", seq=seq, time=1_790_000_000_000 + seq, data="{}") for seq in range(20)]
    with SessionStore(path) as store:
        parent = None
        for number in range(SESSIONS):
            if number % 10 == 0:
                parent = store.create(cwd=f"/home/user/projects/project-{number // 10}")
                store.append_events(parent.id, events)
            else:
                assert parent is not None
                store.create(cwd=parent.cwd)


def _median(argv: list[str], env: dict[str, str]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _pytest_figures(env: dict[str, str], scratch: Path) -> tuple[float, float]:
    project = scratch / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (project / "test_one.py").write_text("def test_one() -> None:\n    pass\n", encoding="utf-8")
    base = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-p",
        "no:xdist",
    ]
    with_plugin, without = 0.0, 0.0
    for _ in range(2):
        with_plugin += _median_in(base, env, project)
        without += _median_in([*base, "-p", "no:dsh"], env, project)
    return with_plugin / 2, without / 2


def _median_in(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    times = []
    for _ in range(RUNS // 3 + 1):
        started = time.perf_counter()
        subprocess.run(
            argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dsh-bench-startup-") as scratch:
        env = {**os.environ, "XDG_DATA_HOME": str(Path(scratch) / "data"), "NO_COLOR": "1", "COLUMNS": "100"}
        env.pop("DSH_CONFIG", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(scratch) / "pycache")
        full = Path(scratch) / "full.db"
        _full_store(full)
        commands = {**COMMANDS, FULL: ["sessions", "list", "--store", str(full)]}
        piped = {k: v for k, v in env.items() if k != "COLUMNS"}  # as a script piping the list runs it
        for args in (
            [sys.executable, "-c", _TYPER_FLOOR],
            *([sys.executable, "-c", _DSH, *a] for a in commands.values()),
        ):
            subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        figures = {name: 0.0 for name in ("python -c pass", "typer floor", *commands)}
        # interleaved rounds, so a burst of load on the machine falls on every command alike
        for _ in range(2):
            figures["python -c pass"] += _median([sys.executable, "-c", "pass"], env)
            figures["typer floor"] += _median([sys.executable, "-c", _TYPER_FLOOR], env)
            for name, args in commands.items():
                figures[name] += _median([sys.executable, "-c", _DSH, *args], piped if name == FULL else env)
        with_plugin, without = _pytest_figures(env, Path(scratch))
    floor = figures["python -c pass"]
    print(f"  {'python -c pass':<20} {floor / 2 * 1000:7.1f} ms  (the floor)")
    typer_floor = figures["typer floor"]
    print(
        f"  {'typer floor':<20} {typer_floor / 2 * 1000:7.1f} ms  {typer_floor / floor:5.1f}x the floor"
        "  (a one-command typer app's --help: context, not a target)"
    )
    worst = 0.0
    for name in commands:
        ratio = figures[name] / floor
        worst = max(worst, ratio)
        shown = f"dsh {name}" if name == FULL else name
        print(f"  {shown:<28} {figures[name] / 2 * 1000:7.1f} ms  {ratio:5.1f}x the floor")
    print(f"  worst ratio {worst:.1f}x (target <= {TARGET:.0f}x)")
    print(
        f"target every command <= {TARGET:.0f}x python -c pass: {'met' if worst <= TARGET else 'MISSED'} ({worst:.1f}x)"
    )
    print(
        f"  pytest, one test: {with_plugin * 1000:.1f} ms with dsh's plugin (inert), {without * 1000:.1f} ms with "
        f"-p no:dsh: {with_plugin / without:.2f}x (context, not a target)"
    )
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
