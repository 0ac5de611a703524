"""`dsh replay ...`: the replay command group, added to `dsh` through the `dsh.commands` entry point. `inspect`
prints a recorded log's model-call script."""

from __future__ import annotations

import json
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Annotated, Any

import anyio
import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from dsh.runtime.host import bundled_recording, open_store, resolve_session
from dsh.runtime.llm import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishAborted,
    FinishError,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
)

from ..driver._prompts import unseen_note
from ..driver._rerun import Rerun, record, rerun
from ..driver._scenario import SCENARIO_FILE, discover, load_scenario
from ..recordings._errors import RecordingFailed, ScriptError
from ..script._recording import ROOT_LOG, Recording, child_logs, load_recording, stored_recording
from ..script._script import Hang, ScriptEntry, Throw
from ._batch import Report, holds_many, replay_all, summary_table, tally
from ._goldens import compare_goldens
from ._report import write_scenario

__all__ = ["record_scenario", "replay_app"]


class _RunByDefault(TyperGroup):
    """`dsh replay LOG` means `dsh replay run LOG`; `dsh replay inspect LOG` stays a subcommand."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # Any: typer's bundled click Context type
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


replay_app = typer.Typer(
    cls=_RunByDefault,
    help="Replay recorded sessions: `dsh replay LOG` re-runs one, `dsh replay DIR` every scenario below DIR; "
    "`dsh replay inspect LOG` prints a log's script.\n\n"
    "Example: dsh replay demo  (the bundled demo recording)\n\n"
    "Example: dsh replay scenarios/ --quiet",
    no_args_is_help=True,
)


_PREVIEW = 48


@replay_app.callback()
def _group() -> None:
    """Replay recorded sessions."""


def _clip(text: str) -> str:
    """Text quoted, escaped as JSON, cut to a preview."""
    shown = json.dumps(text, ensure_ascii=False)
    return shown if len(shown) <= _PREVIEW else shown[: _PREVIEW - 2] + '…"'


def _clip_raw(text: str) -> str:
    """JSON text (tool arguments) as written, on one line, cut to a preview."""
    shown = text.replace("\n", "\\n")
    return shown if len(shown) <= _PREVIEW else shown[: _PREVIEW - 1] + "…"


def _said(chunks: tuple[StreamChunk, ...]) -> str:
    """What a call says, briefly: its blocks (from their ends, or their deltas while open) and an error's code."""
    kinds: dict[int, str] = {}
    parts: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    ended: dict[int, str] = {}
    failure = ""
    for chunk in chunks:
        if isinstance(chunk, BlockStart):
            kinds[chunk.index] = chunk.block_type
            parts[chunk.index] = []
        elif isinstance(chunk, TextDelta | ReasoningDelta):
            parts.setdefault(chunk.index, []).append(chunk.text)
        elif isinstance(chunk, ToolCallDelta):
            parts.setdefault(chunk.index, []).append(chunk.arguments_delta)
            if chunk.name:
                names[chunk.index] = chunk.name
        elif isinstance(chunk, BlockEnd):
            block = chunk.block
            if isinstance(block, TextBlock):
                ended[chunk.index] = _clip(block.text)
            elif isinstance(block, ReasoningBlock):
                ended[chunk.index] = f"reasoning({len(block.text)} chars)"
            elif isinstance(block, ToolCallBlock):
                ended[chunk.index] = f"{block.name}({_clip_raw(block.arguments)})"
        elif isinstance(chunk, Finish) and isinstance(chunk.reason, FinishError | FinishAborted):
            failure = f"{chunk.reason.failure.code}: {_clip(chunk.reason.failure.message)}"
    said = []
    for index in sorted(kinds.keys() | ended.keys()):
        if index in ended:
            said.append(ended[index])
            continue
        text = "".join(parts.get(index, []))
        kind = kinds.get(index)
        if kind == "reasoning":
            said.append(f"reasoning({len(text)} chars, open)")
        elif kind == "tool-call":
            said.append(f"{names.get(index, '?')}({_clip_raw(text)}, open)")
        else:
            said.append(f"{_clip(text)} (open)")
    if failure:
        said.append(failure)
    return " ".join(said)


def _key(entry: ScriptEntry) -> str:
    """(turn,step,attempt): the kind column says whose call it is."""
    return f"({entry.call.turn},{entry.call.step},{entry.call.attempt})"


def _line(entry: ScriptEntry, log_name: str) -> str:
    place = entry.place
    if place.startswith(f"{log_name}:"):
        place = f"line {place.removeprefix(f'{log_name}:')}"
    elif place.startswith(f"{log_name} seq "):
        place = place.removeprefix(f"{log_name} ")
    if isinstance(entry.end, Throw):
        ending = f"throw {entry.end.code}: {_clip(entry.end.message)}"
    elif isinstance(entry.end, Hang):
        ending = "hang" + ("" if entry.end.ready_file is None else f" (ready file {entry.end.ready_file})")
    else:
        ending = entry.finish_kind or "unfinished"
    said = _said(entry.chunks)
    override = f"  [override: {entry.override}]" if entry.override else ""
    count = f"{len(entry.chunks):>4} {'chunk' if len(entry.chunks) == 1 else 'chunks':<6}"
    return f"  {_key(entry):<9} {entry.kind:<10} {count}  {ending:<11} {said}{override}  ({place})"


def _load(log: str, override: Path | None, store: str | None) -> tuple[Recording, list[Path]]:
    if store is not None:
        with open_store(store, looking_for=log) as opened:
            return stored_recording(opened, resolve_session(opened, log), override=override), []
    path = bundled_recording(Path(log))
    if not path.exists():
        raise ScriptError(
            "no such file or directory; LOG is a JSONL log, a scenario directory (session.jsonl, session.N.jsonl, "
            "override.json), or a session id with --store",
            place=log,
        )
    if path.is_dir():
        return load_recording(path, override=override), child_logs(path)
    return load_recording(path, override=override), []


@replay_app.command("inspect")
def inspect(
    log: Annotated[
        str,
        typer.Argument(
            metavar="LOG", help="A JSONL log, a scenario directory, or (with --store) a stored session id."
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per entry.")] = False,
    override: Annotated[
        Path | None,
        typer.Option("--override", help="An override file (default: a directory's override.json)."),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store", help="Read LOG as a session id of this store (a SQLite file or a postgresql:// URL)."
        ),
    ] = None,
) -> None:
    """Print the model-call script of a recorded log, one line per call: (turn,step,attempt), kind, chunk count,
    how it finishes and what it says. A stream with no finish and no override is an error.

    Example: dsh replay inspect demo --json
    """
    recording, children = _load(log, override, store)
    script = recording.root
    if as_json:
        for entry in script.entries:
            typer.echo(
                json.dumps(
                    {
                        "turn": entry.call.turn,
                        "step": entry.call.step,
                        "attempt": entry.call.attempt,
                        "kind": entry.kind,
                        "chunks": len(entry.chunks),
                        "finish": entry.finish_kind,
                    }
                )
            )
        return
    info = script.log
    seed = f", sliced at seedLength {info.seed_length}" if info.seed_length else ""
    providers = ", ".join(script.providers) or "none named"
    count = len(script.entries)
    typer.echo(f"{info.name}: {count} call{'' if count == 1 else 's'} (providers: {providers}{seed})")
    for entry in script.entries:
        typer.echo(_line(entry, info.name))
    if children:
        typer.echo(f"child logs: {', '.join(p.name for p in children)} (inspect each by its path)")


@replay_app.command("run")
def run(
    log: Annotated[
        Path,
        typer.Argument(
            metavar="LOG_OR_SCENARIO_OR_DIR",
            help="A JSONL log, a scenario directory, a directory of scenarios (every scenario.yml below it), or "
            "`demo` (the bundled demo recording).",
        ),
    ],
    workspace: Annotated[
        Path | None,
        typer.Option("--workspace", help="Copy this directory as the workspace \\[default: the scenario's]."),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the replayed log here (JSONL).")] = None,
    pace: Annotated[
        float, typer.Option("--pace", help="Wait MS before each chunk, to stream like live.")
    ] = 0.0,
    quiet: Annotated[
        bool | None,
        typer.Option(
            "--quiet/--show",
            "-q",
            help="Hide (or show) the replayed sessions \\[default: shown for one scenario, hidden for many].",
            show_default=False,
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Read LOG as a session id of this store (a SQLite file or a postgresql:// URL), its children too.",
        ),
    ] = None,
    wire: Annotated[
        bool,
        typer.Option(
            "--wire",
            help="Serve the recorded model calls on the provider's wire format to the deployment's real adapter "
            "(a local server), so request building and stream parsing run too.",
        ),
    ] = False,
) -> None:
    """Re-run a recording: its user messages drive the real loop, its model calls are served from the log, its
    tools run live in a copy of the workspace; exits 1 at the first divergence from the recording.

    Given a directory of scenarios (e.g. scenarios/), re-runs each one, with a progress bar on stderr when it is a terminal (a plain line per scenario otherwise), then prints a table of them on stdout; exits 1 if any diverged (each divergence is shown on stderr), 2 if one could not be replayed.

    Example: dsh replay demo
    Example: dsh replay scenarios/ --quiet
    """
    log = bundled_recording(log) if store is None else log
    if holds_many(log):
        for name, given in (("--out", out), ("--workspace", workspace)):
            if given is not None:
                raise typer.BadParameter(
                    "applies to one scenario; replay a scenario directory to use it", param_hint=name
                )
        _run_many(log, pace=pace, show=quiet is False, wire=wire)
        return
    console = Console(stderr=True)
    with TemporaryDirectory(prefix="dsh-replay-") as exported:
        scenario = load_scenario(
            log if store is None else _exported_scenario(store, str(log), Path(exported))
        )
        console.print(f"[bold]replaying[/] {log}", highlight=False)
        result = anyio.run(
            lambda: rerun(
                scenario,
                workspace=workspace,
                pace_ms=pace,
                echo=None if quiet else Console(soft_wrap=True),
                wire=wire,
            )
        )
    if out is not None and result.logs:
        out.write_bytes(result.logs[0][1])
        for number, (_, data) in enumerate(result.logs[1:], 1):
            out.with_name(f"{out.stem}.{number}{out.suffix}").write_bytes(data)
    _note_unseen(console, {tool: [scenario.name] for tool in result.unseen_tools})
    if result.divergence is not None:
        console.print(f"[bold red]diverged[/] from the recording\n{result.divergence}", highlight=False)
        raise typer.Exit(1)
    goldens = _goldens(scenario.directory, result)
    if goldens:
        console.print(
            f"[bold red]differs from its goldens[/] (the recording's skeleton matches)\n{escape(goldens[0])}"
            + ("" if len(goldens) == 1 else "\n(the view golden differs too)"),
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)
    compared = "" if goldens is None else " and its goldens"
    console.print(f"[bold green]matches[/] the recording{compared}: {tally(result)}", highlight=False)


def _goldens(directory: Path | None, result: Rerun) -> list[str] | None:
    """The reports of the goldens beside the scenario that the re-run does not match (None: it has none)."""
    if directory is None:
        return None
    try:
        return compare_goldens(directory, result)
    except ModuleNotFoundError:
        Console(stderr=True).print(
            "[yellow]note[/]: the scenario has goldens, which are syrupy snapshots; not compared, as syrupy is "
            "not installed (pip install syrupy)",
            highlight=False,
            soft_wrap=True,
        )
        return None


def _note_unseen(console: Console, unseen: dict[str, list[str]]) -> None:
    """Each tool offered that a recording never saw, once (see replay/driver/_prompts.py)."""
    for tool, names in sorted(unseen.items()):
        console.print(
            f"[yellow]note[/] {escape(unseen_note(tool))} ({escape(', '.join(names))})", highlight=False
        )


def _exported_scenario(store: str, session_id: str, directory: Path) -> Path:
    """A stored session (and the children it spawned or forked) written out as a scenario directory."""
    with open_store(store, looking_for=session_id) as opened:
        return write_scenario(opened, resolve_session(opened, session_id), directory)


def _run_many(root: Path, *, pace: float, show: bool, wire: bool = False) -> None:
    """`dsh replay DIR`: every scenario below `root`, progress on stderr, the table on stdout, then each scenario
    that did not match on stderr."""
    scenarios = discover(root)
    if not scenarios:
        raise ScriptError(
            f"no scenario here: a directory to replay holds {SCENARIO_FILE} or {ROOT_LOG}, or scenario "
            f"directories (with {SCENARIO_FILE}) below it",
            place=str(root),
        )
    console = Console(stderr=True)
    for log in sorted(root.rglob(ROOT_LOG)):
        if not (log.parent / SCENARIO_FILE).is_file():
            console.print(
                f"[yellow]skipped[/] {escape(str(log.parent))}: a recording without {SCENARIO_FILE} "
                f"(replay it alone: dsh replay {escape(str(log.parent))})",
                highlight=False,
                soft_wrap=True,
            )
    with Report(console, len(scenarios)) as report:
        outcomes = anyio.run(
            lambda: replay_all(
                scenarios, report, pace_ms=pace, echo=Console(soft_wrap=True) if show else None, wire=wire
            )
        )
    Console().print(summary_table(outcomes))
    for outcome in outcomes:
        problem = outcome.error if outcome.error is not None else outcome.divergence
        if problem is not None:
            console.print(
                f"[bold red]{outcome.result}[/] {escape(outcome.name)}: {escape(problem)}",
                highlight=False,
                soft_wrap=True,
            )
    unseen: dict[str, list[str]] = {}
    for outcome in outcomes:
        for tool in outcome.unseen_tools:
            unseen.setdefault(tool, []).append(outcome.name)
    _note_unseen(console, unseen)
    failed = sum(1 for outcome in outcomes if outcome.result == "failed")
    diverged = sum(1 for outcome in outcomes if outcome.result == "diverged")
    if failed or diverged:
        raise typer.Exit(2 if failed else 1)


def record_scenario(
    scenario_dir: Annotated[
        Path, typer.Argument(metavar="SCENARIO", help="The scenario directory to record into.")
    ],
    script: Annotated[
        Path | None,
        typer.Option(
            "--script", help="Serve this replies.yml instead of the live model (an authored recording)."
        ),
    ] = None,
) -> None:
    """Run a scenario's `inputs:` against its deployment's live model (or, with --script, a hand-written one),
    streaming each turn as `dsh run` does, and write `session.jsonl` (+ `session.N.jsonl` for child sessions) into
    the scenario, the workspace written {{cwd}}. Exits 1 when a turn ended in error (the logs are written, for a
    look) or the --script replies do not match the model calls made.

    Example: dsh record scenarios/my-scenario  (with DEEPSEEK_API_KEY set)
    """
    scenario = load_scenario(scenario_dir)
    directory = scenario.directory
    if directory is None:
        raise ScriptError(
            "record into a scenario directory (with scenario.yml), not a file", place=str(scenario_dir)
        )
    failed: RecordingFailed | None = None
    logs: list[tuple[object, bytes]]
    try:
        logs = list(anyio.run(lambda: record(scenario, replies=script, echo=Console(soft_wrap=True))))
    except RecordingFailed as error:
        failed, logs = error, error.logs
    for stale in child_logs(directory):
        stale.unlink()
    for number, (_, data) in enumerate(logs):
        name = ROOT_LOG if number == 0 else f"session.{number}.jsonl"
        (directory / name).write_bytes(data)
    count = f"{len(logs)} session log{'' if len(logs) == 1 else 's'}"
    if failed is not None:
        Console(stderr=True).print(
            f"error: the recording failed: {escape('; '.join(failed.problems))}. The {count} {'is' if len(logs) == 1 else 'are'} "
            f"written into {escape(str(directory))} for a look; it is no scenario to keep: fix the cause, then "
            "record again",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)
    typer.echo(f"recorded {count} into {directory}")
