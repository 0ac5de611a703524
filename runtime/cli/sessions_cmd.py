"""`dsh sessions list | show | export | import | fork | copy | tail`: the session store from the command line."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from dsh.runtime.host import (
    ByteProgress,
    ConfigOption,
    StoreOption,
    count_progress,
    open_store,
    resolve_session,
    terminal_stderr,
)
from dsh.runtime.jsonlines import MAX_LINE, JsonLimits
from dsh.runtime.kernel.errors import ConfigError, SessionError
from dsh.runtime.llm import Message, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from dsh.runtime.session import (
    AssistantChunk,
    AssistantMessageEvent,
    RequestContext,
    SessionEndSeed,
    SessionInfo,
    SessionStoreProtocol,
    SessionTitle,
    SessionTitleData,
    StepEnd,
    StepStart,
    StoredEvent,
    ToolCall,
    ToolResultEvent,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    UserMessageEvent,
    copy_plan,
    copy_sessions,
    event_line,
    export_jsonl,
    fold_stats,
    follow,
    import_jsonl,
    own_events,
    project,
    redact_url,
    session_stats,
)

from ._sessions_list import (
    COLUMNS,
    PIPED_WIDTH,
    USAGE_COLUMNS,
    info_json,
    link,
    session_rows,
    sessions_json,
    when,
)
from ._stats_view import print_stats, resolve_prices, stats_json, turn_line, usage_cell

__all__ = ["sessions_app", "sessions_table"]

sessions_app = typer.Typer(
    help="Session logs: list, show, stats, title, trace, export, import, fork, copy, tail.\n\nExample: dsh sessions list --store sessions.db",
    no_args_is_help=True,
)


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _open(store: str | None, session_id: str | None = None) -> SessionStoreProtocol:
    return open_store(store, looking_for=session_id)


def _events(count: int) -> str:
    return f"{count} event{'' if count == 1 else 's'}"


def sessions_table(
    store: SessionStoreProtocol,
    *,
    current: str | None = None,
    usage: dict[str, tuple[str, str]] | None = None,
) -> Table:
    """The store's sessions, oldest first, each parent's forks and subagents indented under it, as a table
    (`current`, when given, is marked with `*`; `usage`, when given, adds each session's title, tokens and cost)."""
    title, rows = session_rows(store, current=current, usage=usage)
    table = Table(title=title)
    table.add_column(COLUMNS[0], no_wrap=True)  # ids are copied into --session: never folded
    for column in (*COLUMNS[1:], *(USAGE_COLUMNS if usage is not None else ())):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def _forked(info: SessionInfo) -> str:
    """Where a child came from, numbered as `dsh sessions fork --at` numbers it: the last seq it inherited."""
    if info.seed_length is None:
        return f"spawned by {info.parent_id}"
    if not info.seed_length:
        return f"forked from {info.parent_id}, inheriting nothing"
    return f"forked from {info.parent_id} at seq {info.seed_length - 1}"


def _table_console() -> Console:
    """The console a sessions table is printed on: piped with no `COLUMNS`, wide enough that no row is folded to 80
    columns (a script reading `dsh sessions list | ...` gets one line per session)."""
    console = Console()
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(width=PIPED_WIDTH)
    return console


UsageOption = Annotated[
    bool,
    typer.Option(
        "--usage",
        help="Add each session's title, tokens and cost (its own events, read whole: slower on a large store).",
    ),
]


@sessions_app.command("list")
def list_sessions(
    store: StoreOption = None,
    as_json: JsonOption = False,
    usage: UsageOption = False,
    config: ConfigOption = None,
) -> None:
    """List the sessions in the store, oldest first, each parent's forks and subagents indented under it.
    `--usage` adds each session's title, tokens and cost (priced by the deployment of `--config`, else DeepSeek's
    published prices).

    Example: dsh sessions list --usage --store sessions.db
    """
    with _open(store) as opened:
        if not usage:
            if as_json:
                typer.echo(sessions_json(opened))
            else:
                _table_console().print(sessions_table(opened))
            return
        prices = resolve_prices(config)
        figures = {
            info.id: session_stats(opened, info.id, prices=prices, children=False)
            for info in opened.sessions()
        }
        if as_json:
            sessions = json.loads(sessions_json(opened))
            for data in sessions:
                each = figures[data["id"]]
                data.update(
                    {
                        name: getattr(each, name)
                        for name in ("input_tokens", "output_tokens", "reasoning_tokens", "cache_read_tokens")
                    }
                )
                data["cost"] = each.cost
                data["currency"] = each.currency
                data["title"] = each.title
            typer.echo(json.dumps(sessions))
            return
        usage_cells = {
            str(session): (each.title or "-", usage_cell(each, each.currency))
            for session, each in figures.items()
        }
        table = sessions_table(opened, usage=usage_cells)
        _table_console().print(table)


@dataclass(frozen=True)
class _Node:
    """A fork or subagent of the shown session, with its own children."""

    info: SessionInfo
    length: int
    children: list[_Node]

    def json(self) -> dict[str, Any]:
        data = info_json(self.info, self.length)
        data["children"] = [child.json() for child in self.children]
        return data

    def label(self) -> str:
        info = self.info
        return f"{info.id}  {link(info)}, depth {info.delegation_depth}, {_events(self.length)}"


def _child_tree(store: SessionStoreProtocol, info: SessionInfo, seen: set[str] | None = None) -> list[_Node]:
    """The forks and subagents of a session, recursively (a session met twice is shown once)."""
    seen = seen if seen is not None else {info.id}
    nodes = []
    for child in store.children(info.id):
        if child.id in seen:
            continue
        seen.add(child.id)
        nodes.append(_Node(child, store.length(child.id), _child_tree(store, child, seen)))
    return nodes


def _add_branches(tree: Tree, nodes: list[_Node]) -> None:
    for node in nodes:
        _add_branches(tree.add(node.label(), highlight=False), node.children)


def _text_of(message: Message) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(("text", block.text))
        elif isinstance(block, ReasoningBlock):
            parts.append(("reasoning", block.text))
        elif isinstance(block, ToolCallBlock):
            continue  # shown once, by its own tool/call event
        elif isinstance(block, ToolResultBlock):
            inner = " ".join(b.text if isinstance(b, TextBlock) else "[image]" for b in block.content)
            parts.append(("tool-result", inner))
        else:
            parts.append(("other", "[image]"))
    return parts


def _why(reason: TurnEndReason) -> str:
    """Why a turn ended, when its reason says: a failure's message and code, or a reason's own message."""
    if reason.error is not None and reason.error.message:
        code = f" [{reason.error.code}]" if reason.error.code else ""
        return f": {reason.error.message}{code}"
    return f": {reason.message}" if reason.message else ""


_STYLES = {"reasoning": "dim italic", "tool-call": "yellow", "tool-result": "green", "other": "dim"}


_RENDERED = frozenset(
    {
        TurnStart.TAG,
        StepStart.TAG,
        StepEnd.TAG,
        SessionEndSeed.TAG,
        TurnEnd.TAG,
        ToolCall.TAG,
        UserMessageEvent.TAG,
        AssistantMessageEvent.TAG,
        ToolResultEvent.TAG,
    }
)
"""The types `show` draws from their data; the others are named in one dim line, their data never decoded."""


_PIECE = 16_384
"""The most characters of a message's text handed to rich at once: rich splits rendered rows by repeated
`str.partition` over the rest of the text, quadratic in a long text's length (a 45 MiB message took minutes). A text
longer than this is written in pieces without rich's wrapping (a terminal wraps it; a file keeps its lines)."""


def _pieces(text: str) -> Iterator[str]:
    """`text` as rich is given it, its lines indented: runs of whole lines up to about `_PIECE` characters, and a
    line longer than that cut at its last space before `_PIECE` (or at `_PIECE`, if it has none), so `sessions show`
    is linear in a message's size. A message of ordinary size is one piece, printed as it always was."""
    run: list[str] = []
    size = 0
    for line in text.split("\n"):
        while len(line) > _PIECE:
            cut = line.rfind(" ", 0, _PIECE) + 1 or _PIECE
            if run:
                yield "  " + "\n  ".join(run)
                run, size = [], 0
            yield "  " + line[:cut]
            line = line[cut:]
        run.append(line)
        size += len(line) + 3
        if size >= _PIECE:
            yield "  " + "\n  ".join(run)
            run, size = [], 0
    if run:
        yield "  " + "\n  ".join(run)


def _render(
    console: Console,
    event: StoredEvent,
    spawned: dict[tuple[int, int, str], list[str]],
    turns: dict[int, str] | None = None,
) -> None:
    kind = event.type
    if kind not in _RENDERED:
        if kind not in (AssistantChunk.TAG, RequestContext.TAG):
            console.print(Text(f"  · {kind} (seq {event.seq})", style="dim"))
        return
    view = event.view()  # decoded once, through the log's one event table
    if isinstance(view, TurnStart):
        console.rule(f"turn {view.data.turn}  (seq {event.seq})")
    elif isinstance(view, StepStart):
        console.print(f"[bold]step {view.data.step}[/]", highlight=False)
    elif isinstance(view, SessionEndSeed):
        console.print(f"[magenta]── end of seed (seq {event.seq}) ──[/]")
    elif isinstance(view, StepEnd):
        return
    elif isinstance(view, TurnEnd):
        console.print(
            Text.assemble(
                (f"turn {view.data.turn} ended:", "bold"),
                f" {view.data.reason.kind}{_why(view.data.reason)}  (seq {event.seq})",
            )
        )
        figures = None if turns is None else turns.get(view.data.turn)
        if figures is not None:
            console.print(Text(f"  {figures}", style="dim"))
    elif isinstance(view, ToolCall):
        call = view.data
        console.print(Text(f"  → tool/call {call.name} {call.arguments}", style="yellow"))
        for child in spawned.get((call.turn, call.step, call.call_id), ()):
            console.print(Text(f"    ↳ subagent session {child}", style="magenta"))
    elif isinstance(view, UserMessageEvent | AssistantMessageEvent | ToolResultEvent):
        message = view.data if isinstance(view, UserMessageEvent) else view.data.message
        replaced = (
            "" if event.surface_op == "append" else f" (replaces {msgspec.to_builtins(event.surface_op)})"
        )
        who = {
            UserMessageEvent.TAG: "user",
            AssistantMessageEvent.TAG: "assistant",
            ToolResultEvent.TAG: "tool",
        }[kind]
        if isinstance(view, AssistantMessageEvent) and view.data.interrupted:
            who += " (interrupted)"
        if isinstance(view, ToolResultEvent) and view.data.error is not None:
            who += f" ({view.data.error.code})"
        console.print(Text(f"{who}{replaced}  seq {event.seq}", style="bold cyan"))
        for part, text in _text_of(message):
            style = _STYLES.get(part, "")
            if len(text) <= _PIECE:  # rich wraps it to the console's width
                console.print(Text("  " + text.replace("\n", "\n  "), style=style))
                continue
            for piece in _pieces(text):  # a long text is written as is: rich's rendering costs it dearly
                console.out(piece, style=style or None, highlight=False)


@sessions_app.command("show")
def show(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session id (or a unique prefix of it).")
    ],
    store: StoreOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Show a session: its forks and subagents as a tree, then its turns, steps, tool calls and messages, and
    under each turn's end its figures (steps, model calls, tokens, cost, time; priced as `dsh sessions stats`).

    Example: dsh sessions show 4f1c2a9e-7b3d-4c8e-9a51-2d6e0f8b3c17 --store sessions.db
    """
    with _open(store, session_id) as opened:
        session_id = resolve_session(opened, session_id)
        info = opened.info(session_id)
        length = opened.length(session_id)
        children = _child_tree(opened, info)
        if as_json:
            projection = project(opened.events(session_id, skip_types=(AssistantChunk,)))
            typer.echo(
                json.dumps(
                    {
                        "session": info_json(info, length),
                        "children": [node.json() for node in children],
                        "title": projection.title,
                        "header": None
                        if projection.header_json is None
                        else json.loads(projection.header_json),
                        "todos": msgspec.to_builtins(projection.todos),
                        "messages": [
                            {"seq": m.seq, "type": m.type, "message": json.loads(m.json)}
                            for m in projection.messages
                        ],
                    }
                )
            )
            return
        console = Console()
        parent = "" if info.parent_id is None else f", {_forked(info)}"
        console.print(
            f"[bold]session {info.id}[/]: {_events(length)}, created {when(info.created_at)} UTC{parent}"
        )
        if children:
            tree = Tree(f"forks and subagents of {info.id}", highlight=False)
            _add_branches(tree, children)
            console.print(tree)
        spawned: dict[tuple[int, int, str], list[str]] = {}
        for node in children:
            by = node.info.spawned_by
            if by is not None:
                spawned.setdefault((by.turn, by.step, by.call_id), []).append(node.info.id)
        figures = fold_stats(session_id, opened.events(session_id), prices=resolve_prices(config))
        turns = {turn.turn: turn_line(turn, figures.currency) for turn in figures.per_turn}
        for event in opened.events(session_id, skip_types=(AssistantChunk,)):
            _render(console, event, spawned, turns)


@sessions_app.command("stats")
def stats(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session id (or a unique prefix of it).")
    ],
    store: StoreOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """What a session cost and where its time went: turns, steps, model calls and retries, tool calls per tool
    with errors, tokens (input, output, reasoning, cache hits), time to first token and time per model call, tool
    time, wall time, and cost; then each fork and subagent, and their sums. Prices come from the deployment of
    `--config` (or $DSH_CONFIG: its `stats` plugin), else DeepSeek's published prices.

    Example: dsh sessions stats 01J5Z3... --json
    """
    prices = resolve_prices(config)
    with _open(store, session_id) as opened:
        session_id = resolve_session(opened, session_id)
        figures = session_stats(opened, session_id, prices=prices)
    if as_json:
        typer.echo(json.dumps(stats_json(figures)))
        return
    print_stats(Console(), figures)


@sessions_app.command("title")
def title(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session id (or a unique prefix of it).")
    ],
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The title.")],
    store: StoreOption = None,
) -> None:
    """Name a session by hand: appends `session/title` (source `user`), which `sessions list --usage`, `show` and
    `stats` show, and which the `titles` plugin never replaces. Refused while another process writes the session.

    Example: dsh sessions title 01J5Z3... "Fix the flaky upload test"
    """
    cleaned = " ".join(text.split())
    if not cleaned:
        raise SessionError("a title needs some text; got only whitespace")
    with _open(store, session_id) as opened:
        session_id = resolve_session(opened, session_id)
        lease = opened.acquire_lease(session_id)
        try:
            last = opened.last_event(session_id)
            clock = opened.session_clock(session_id)
            event = SessionTitle(data=SessionTitleData(title=cleaned, source={"kind": "user"}))
            stored = StoredEvent.from_event(
                event,
                seq=opened.length(session_id),
                time=max(clock.now_ms(), last.time if last is not None else 0),
            )
            opened.append_events(session_id, [stored], lease=lease)
        finally:
            opened.release_lease(lease)
    typer.echo(f"session {session_id} is titled {json.dumps(cleaned, ensure_ascii=False)}")


TRACE_ENTRY_POINT_GROUP = "dsh.trace"
"""Where `dsh sessions trace` finds its exporter (runtime imports no plugin): `dsh.plugins.otel:export_stored`."""


@sessions_app.command("trace")
def trace(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session id (or a unique prefix of it).")
    ],
    store: StoreOption = None,
    config: ConfigOption = None,
    content: Annotated[
        bool,
        typer.Option(
            "--content", help="Also export what the model said and the tools' arguments and results."
        ),
    ] = False,
) -> None:
    """Export a stored session, its subagents and forks as one OpenTelemetry trace over OTLP/HTTP: a span per
    turn, model call (GenAI conventions: model, usage, finish reasons) and tool call, at the log's times. Sent where
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT, points (headers from
    OTEL_EXPORTER_OTLP_HEADERS); needs the `otel` extra.

    Example: dsh sessions trace 01J5Z3... (with OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318)
    """
    from importlib.metadata import entry_points

    found = list(entry_points(group=TRACE_ENTRY_POINT_GROUP))
    if not found:
        raise ConfigError(
            f"no trace exporter is installed (nothing in the `{TRACE_ENTRY_POINT_GROUP}` entry-point group); "
            "dsh.plugins.otel provides it"
        )
    try:
        export = found[0].load()
    except ImportError as error:
        raise ConfigError(
            f"dsh sessions trace needs OpenTelemetry: pip install 'dsh-runtime[otel]' ({error})"
        ) from error
    prices = resolve_prices(config)
    with _open(store, session_id) as opened:
        session_id = resolve_session(opened, session_id)
        sent = export(opened, session_id, content=content, prices=prices)
    typer.echo(
        f"exported session {session_id}: {sent.spans} spans in trace {sent.trace_id} to {sent.endpoint}"
    )


@sessions_app.command("export")
def export(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session id (or a unique prefix of it).")
    ],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write here instead of stdout.")
    ] = None,
    no_pack: Annotated[bool, typer.Option("--no-pack", help="Write every chunk as its own line.")] = False,
    store: StoreOption = None,
) -> None:
    """Export a session as JSONL (format version 0); a fork's inherited prefix is written out in full.

    Example: dsh sessions export 4f1c2a9e-7b3d-4c8e-9a51-2d6e0f8b3c17 -o session.jsonl
    """
    with _open(store, session_id) as opened:
        session_id = resolve_session(opened, session_id)
        if output is None:
            export_jsonl(opened, session_id, sys.stdout.buffer, pack=not no_pack)
            sys.stdout.buffer.flush()
        else:
            with output.open("wb") as handle:
                export_jsonl(opened, session_id, handle, pack=not no_pack)


@sessions_app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="A JSONL session log (format version 0).")],
    store: StoreOption = None,
    as_json: JsonOption = False,
    max_line: Annotated[
        int,
        typer.Option(
            "--max-line-bytes", min=1, help="Refuse a line longer than this, before reading it whole."
        ),
    ] = MAX_LINE,
) -> None:
    """Import a JSONL log as a new session; a bad file is refused whole, naming the line and the rule. A large
    file shows a bar of the bytes read on stderr, when stderr is a terminal.

    Example: dsh sessions import session.jsonl
    """
    if not file.is_file():
        what = "a directory" if file.is_dir() else "no such file"
        raise SessionError(f"{file}: {what}; expected a JSONL session log (format version 0)")
    from dsh.runtime.agent import (
        AgentState,
    )  # here: the other sessions commands do not load the agent package

    console = terminal_stderr()
    with _open(store) as opened:
        # the agent's fold checks what an agent will read back (its inbox): a log it could not open is refused here
        if console is None:
            info = import_jsonl(opened, file, limits=JsonLimits(max_line=max_line), folds=(AgentState(),))
        else:
            with ByteProgress(console, f"importing {file.name}", file.stat().st_size) as progress:
                info = import_jsonl(
                    opened,
                    file,
                    progress=progress,
                    limits=JsonLimits(max_line=max_line),
                    folds=(AgentState(),),
                )
        length = opened.length(info.id)
    if as_json:
        typer.echo(json.dumps({"id": info.id}))
    else:
        typer.echo(f"imported {file} as session {info.id} ({_events(length)})")


@sessions_app.command("fork")
def fork(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session to fork (its id or a unique prefix of it).")
    ],
    at: Annotated[
        int | None, typer.Option("--at", help="The last inherited seq (default: the last event).")
    ] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fork a session by reference: the child inherits events 0..AT and copies none.

    Example: dsh sessions fork 4f1c2a9e-7b3d-4c8e-9a51-2d6e0f8b3c17 --at 41
    """
    with _open(store, session_id) as opened:
        session_id = resolve_session(opened, session_id)
        child = opened.fork(session_id, at)
    if as_json:
        typer.echo(json.dumps({"id": child.id, "seedLength": child.seed_length}))
    else:
        typer.echo(f"forked {session_id} at seq {(child.seed_length or 0) - 1} as session {child.id}")


@sessions_app.command("copy")
def copy(
    source: Annotated[
        str, typer.Argument(metavar="SRC", help="The store to copy from: a file or a postgresql:// URL.")
    ],
    target: Annotated[
        str, typer.Argument(metavar="DST", help="The store to copy into: a file or a postgresql:// URL.")
    ],
    session_ids: Annotated[
        list[str] | None,
        typer.Option("--session", help="Copy only this session (and the parents it forks from); repeatable."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Copy sessions between two stores, keeping their ids, forks and child links (a fork stays a reference to
    its parent, copied first). A session DST already holds is refused before anything is copied. Shows a bar of
    the events copied on stderr, when stderr is a terminal.

    Example: dsh sessions copy ~/.local/share/dsh/sessions.db postgresql://dsh@db.internal/dsh
    """
    with open_store(source) as src, open_store(target) as dst:
        plan = copy_plan(src, session_ids)
        console = terminal_stderr()
        with count_progress(console or Console(stderr=True), disable=console is None) as bar:
            task = bar.add_task(f"copying {len(plan)} sessions", total=own_events(src, plan))
            copied = copy_sessions(src, dst, plan, progress=lambda done: bar.update(task, completed=done))
    if as_json:
        typer.echo(json.dumps({"sessions": [info.id for info in plan], "events": copied}))
    else:
        typer.echo(
            f"copied {len(plan)} sessions ({copied} events) from {redact_url(source)} to {redact_url(target)}"
        )


@sessions_app.command("tail")
def tail(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="The session to follow.")],
    start: Annotated[
        int | None,
        typer.Option(
            "--from", help="Start at this seq (default: the open turn's start, else the log's end)."
        ),
    ] = None,
    follow_on: Annotated[
        bool, typer.Option("--follow", help="Keep following after the turn ends, until Ctrl-C.")
    ] = False,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a session's events as another process appends them (from any host sharing the store), until the
    turn ends or Ctrl-C. `--json` prints each event as a JSONL line of the log format.

    Example: dsh sessions tail 4f1c2a9e-7b3d-4c8e-9a51-2d6e0f8b3c17 --store postgresql://dsh@db.internal/dsh
    """
    console = Console()
    with _open(store, session_id) as opened:
        session_id = resolve_session(opened, session_id)
        try:
            for event in follow(opened, session_id, start=start, until_turn_end=not follow_on):
                if as_json:
                    sys.stdout.buffer.write(event_line(event) + b"\n")
                    sys.stdout.buffer.flush()
                else:
                    _render(console, event, {})
        except KeyboardInterrupt:  # Ctrl-C is how a user stops following: end quietly, as `tail -f` does
            raise typer.Exit(130) from None
