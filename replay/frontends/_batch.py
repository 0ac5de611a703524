"""Replaying many scenarios in one command (`dsh replay fixtures/`): every scenario found below a directory is re-run
in turn and summed up as one outcome (turns, tool calls, child sessions, and whether it matches its recording),
reported while the run goes (a bar on a terminal, one plain line per scenario otherwise) and as a table at the end."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TaskID
from rich.table import Table

from dsh.runtime.host import count_progress
from dsh.runtime.kernel import DshError

from ..driver._rerun import Rerun, rerun
from ..driver._scenario import SCENARIO_FILE, Scenario
from ..script._recording import ROOT_LOG

__all__ = ["Outcome", "Report", "Tally", "holds_many", "replay_all", "summary_table", "tally"]

Result = Literal["matches", "diverged", "failed"]


def holds_many(path: Path) -> bool:
    """Whether `path` is a directory of scenarios rather than one: a directory holding neither `scenario.yml` nor
    `session.jsonl` itself (its scenarios are the `scenario.yml` files below it)."""
    return path.is_dir() and not (path / SCENARIO_FILE).is_file() and not (path / ROOT_LOG).is_file()


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class Tally:
    """What a re-run did: turns ended in the primary session, tool calls in all sessions, child sessions."""

    turns: int
    calls: int
    children: int

    def __str__(self) -> str:
        extra = f", {_plural(self.children, 'child session')}" if self.children else ""
        return f"{_plural(self.turns, 'turn')}, {_plural(self.calls, 'tool call')}{extra}"


def tally(result: Rerun) -> Tally:
    """Count a re-run's turns, tool calls and child sessions from its replayed skeletons."""
    primary = result.replayed[0] if result.replayed else []
    turns = sum(1 for line in primary if line.startswith("turn ") and " ended " in line)
    calls = sum(1 for lines in result.replayed for line in lines if line.startswith("    call "))
    return Tally(turns, calls, max(0, len(result.replayed) - 1))


@dataclass(frozen=True)
class Outcome:
    """One scenario of a many-scenario replay: its name (its path below the directory), what the re-run did, and
    the first divergence from its recording, or the error that kept it from being replayed (a bad fixture)."""

    name: str
    tally: Tally | None
    divergence: str | None = None
    error: str | None = None
    unseen_tools: tuple[str, ...] = ()

    @property
    def result(self) -> Result:
        if self.error is not None:
            return "failed"
        return "matches" if self.divergence is None else "diverged"


_STYLE: dict[Result, str] = {"matches": "green", "diverged": "bold red", "failed": "bold red"}


class Report:
    """How a many-scenario replay is shown while it runs, on `console` (stderr): a progress bar naming the scenario
    being replayed when the console is a terminal (a scenario that does not match is named above it as it
    finishes), else one plain line per scenario as it finishes. Use it as a context manager."""

    def __init__(self, console: Console, total: int) -> None:
        self._console = console
        self._total = total
        self._done = 0
        self._bar: tuple[Progress, TaskID] | None = None
        if console.is_terminal:
            bar = count_progress(console)
            self._bar = bar, bar.add_task("replaying", total=total)

    def __enter__(self) -> Report:
        if self._bar is not None:
            self._bar[0].start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar[0].stop()

    def start(self, scenario: Scenario) -> None:
        if self._bar is not None:
            bar, task = self._bar
            bar.update(task, description=f"replaying {escape(scenario.name)}")

    def finish(self, outcome: Outcome) -> None:
        self._done += 1
        result = f"[{_STYLE[outcome.result]}]{outcome.result}[/]"
        detail = f" ({outcome.tally})" if outcome.tally is not None else ""
        line = f"{escape(outcome.name)}: {result}{escape(detail)}"
        if self._bar is None:
            count = escape(f"[{self._done}/{self._total}]")
            self._console.print(f"{count} {line}", highlight=False, soft_wrap=True)
            return
        bar, task = self._bar
        if outcome.result != "matches":
            bar.console.print(line, highlight=False, soft_wrap=True)
        bar.advance(task)


async def replay_all(
    scenarios: Sequence[Scenario],
    report: Report,
    *,
    pace_ms: float = 0.0,
    echo: Console | None = None,
    wire: bool = False,
) -> list[Outcome]:
    """Re-run each scenario in turn (each in its own scratch workspace and store). A scenario that cannot be
    replayed (its fixture is bad: a `DshError`) is an outcome like a divergence, so one bad fixture does not hide
    what the others do; anything else is a bug and propagates. `echo`, when given, shows each replayed session
    under a rule naming its scenario."""
    outcomes = []
    for scenario in scenarios:
        report.start(scenario)
        if echo is not None:
            echo.rule(scenario.name)
        try:
            result = await rerun(scenario, pace_ms=pace_ms, echo=echo, wire=wire)
        except DshError as error:  # reported as this scenario's outcome, and in the exit status
            outcome = Outcome(scenario.name, None, error=str(error))
        else:
            outcome = Outcome(
                scenario.name, tally(result), divergence=result.divergence, unseen_tools=result.unseen_tools
            )
        report.finish(outcome)
        outcomes.append(outcome)
    return outcomes


def summary_table(outcomes: Sequence[Outcome]) -> Table:
    """One row per scenario: name, turns, tool calls, child sessions and result; the title counts the results."""
    counts = {result: sum(1 for o in outcomes if o.result == result) for result in _STYLE}
    title = ", ".join(f"{count} {result}" for result, count in counts.items() if count)
    table = Table(title=f"{_plural(len(outcomes), 'scenario')}: {title}" if outcomes else "no scenarios")
    table.add_column("scenario", no_wrap=True)  # a name is copied into `dsh replay`: never folded
    for column in ("turns", "tool calls", "child sessions"):
        table.add_column(column, justify="right")
    table.add_column("result")
    for outcome in outcomes:
        numbers = (
            ("-", "-", "-")
            if outcome.tally is None
            else tuple(str(n) for n in (outcome.tally.turns, outcome.tally.calls, outcome.tally.children))
        )
        table.add_row(escape(outcome.name), *numbers, f"[{_STYLE[outcome.result]}]{outcome.result}[/]")
    return table
