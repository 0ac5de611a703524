"""`dsh sessions list | show | export | import | fork`: the session store from the command line."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from runtime.host import ByteProgress, StoreOption, open_store, resolve_session, terminal_stderr
from runtime.jsonlines import MAX_LINE, JsonLimits
from runtime.kernel.errors import SessionError
from runtime.llm import Message, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from runtime.session import (
    AssistantMessage,
    SessionEndSeed,
    SessionInfo,
    SessionStore,
    StepEnd,
    StepStart,
    StoredEvent,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    UserMessage,
    export_jsonl,
    import_jsonl,
    project,
)

__all__ = ["sessions_app", "sessions_table"]

sessions_app = typer.Typer(
    help="Session logs: list, show, export, import, fork.\n\nExample: dsh sessions list --store sessions.db",
    no_args_is_help=True,
)


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _open(store: Path | None, session_id: str | None = None) -> SessionStore:
    return open_store(store, looking_for=session_id)


def _events(count: int) -> str:
    return f"{count} event{'' if count == 1 else 's'}"


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _info_json(info: SessionInfo, length: int) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(info)
    data["events"] = length
    return data


def _link(info: SessionInfo, *, call: bool = True) -> str:
    """How a child hangs off its parent: a fork at its seed length, or spawned fresh; and the call that started it."""
    how = f"fork @{info.seed_length}" if info.seed_length is not None else "spawned"
    if call and info.spawned_by is not None:
        by = info.spawned_by
        how += f", by turn {by.turn} step {by.step} call {by.call_id}"
    return how


def _in_tree_order(sessions: list[SessionInfo]) -> list[tuple[SessionInfo, int]]:
    """Every session with its depth in the parent/child tree: each parent (oldest first) followed by its children.
    A child names its parent by id, or, once imported, by the id its parent had in its file (`imported_from`)."""
    claims: dict[str, SessionInfo] = {}
    for info in sessions:
        claims[info.id] = info
        if info.imported_from is not None:
            claims.setdefault(info.imported_from, info)
    children: dict[str, list[SessionInfo]] = {}
    roots = []
    for info in sessions:
        parent = claims.get(info.parent_id) if info.parent_id is not None else None
        if parent is None or parent.id == info.id:
            roots.append(info)
        else:
            children.setdefault(parent.id, []).append(info)
    ordered: list[tuple[SessionInfo, int]] = []
    seen: set[str] = set()

    def visit(info: SessionInfo, depth: int) -> None:
        if info.id in seen:
            return
        seen.add(info.id)
        ordered.append((info, depth))
        for child in children.get(info.id, ()):
            visit(child, depth + 1)

    for info in roots:
        visit(info, 0)
    for info in sessions:  # a cycle of parents (hand-made imports) has no root; list it anyway
        visit(info, 0)
    return ordered


def sessions_table(store: SessionStore, *, current: str | None = None) -> Table:
    """The store's sessions, oldest first, each parent's forks and subagents indented under it, as a table
    (`current`, when given, is marked with `*`)."""
    ordered = [(info, depth, store.length(info.id)) for info, depth in _in_tree_order(store.sessions())]
    table = Table(title=f"{len(ordered)} session{'' if len(ordered) == 1 else 's'}")
    table.add_column("id", no_wrap=True)  # ids are copied into --session: never folded
    for column in ("created (UTC)", "events", "parent", "cwd"):
        table.add_column(column, overflow="fold")
    for info, depth, length in ordered:
        tree = "" if depth == 0 else "  " * (depth - 1) + "└ "
        mark = "* " if info.id == current else ""
        parent = "-" if info.parent_id is None else f"{info.parent_id} ({_link(info, call=False)})"
        table.add_row(tree + mark + info.id, _when(info.created_at), str(length), parent, info.cwd or "-")
    return table


@sessions_app.command("list")
def list_sessions(store: StoreOption = None, as_json: JsonOption = False) -> None:
    """List the sessions in the store, oldest first, each parent's forks and subagents indented under it.

    Example: dsh sessions list --store sessions.db
    """
    with _open(store) as opened:
        if as_json:
            rows = [(info, opened.length(info.id)) for info in opened.sessions()]
            typer.echo(json.dumps([_info_json(info, length) for info, length in rows]))
            return
        Console().print(sessions_table(opened))


@dataclass(frozen=True)
class _Node:
    """A fork or subagent of the shown session, with its own children."""

    info: SessionInfo
    length: int
    children: list[_Node]

    def json(self) -> dict[str, Any]:
        data = _info_json(self.info, self.length)
        data["children"] = [child.json() for child in self.children]
        return data

    def label(self) -> str:
        info = self.info
        return f"{info.id}  {_link(info)}, depth {info.delegation_depth}, {_events(self.length)}"


def _child_tree(store: SessionStore, info: SessionInfo, seen: set[str] | None = None) -> list[_Node]:
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
        "turn/start",
        "step/start",
        "step/end",
        "session/end-seed",
        "turn/end",
        "tool/call",
        "user/message",
        "assistant/message",
        "tool/result",
    }
)
"""The types `show` draws from their data; the others are named in one dim line, their data never decoded."""


def _render(console: Console, event: StoredEvent, spawned: dict[tuple[int, int, str], list[str]]) -> None:
    kind = event.type
    if kind not in _RENDERED:
        if kind not in ("assistant/chunk", "request/context"):
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
    elif isinstance(view, ToolCall):
        call = view.data
        console.print(Text(f"  → tool/call {call.name} {call.arguments}", style="yellow"))
        for child in spawned.get((call.turn, call.step, call.call_id), ()):
            console.print(Text(f"    ↳ subagent session {child}", style="magenta"))
    elif isinstance(view, UserMessage | AssistantMessage | ToolResult):
        message = view.data if isinstance(view, UserMessage) else view.data.message
        replaced = (
            "" if event.surface_op == "append" else f" (replaces {msgspec.to_builtins(event.surface_op)})"
        )
        who = {"user/message": "user", "assistant/message": "assistant", "tool/result": "tool"}[kind]
        if isinstance(view, AssistantMessage) and view.data.interrupted:
            who += " (interrupted)"
        if isinstance(view, ToolResult) and view.data.error is not None:
            who += f" ({view.data.error.code})"
        console.print(Text(f"{who}{replaced}  seq {event.seq}", style="bold cyan"))
        for part, text in _text_of(message):
            console.print(Text("  " + text.replace("\n", "\n  "), style=_STYLES.get(part, "")))


@sessions_app.command("show")
def show(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session id (or a unique prefix of it).")
    ],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a session: its forks and subagents as a tree, then its turns, steps, tool calls and messages.

    Example: dsh sessions show 01J5Z3... --store sessions.db
    """
    with _open(store, session_id) as opened:
        session_id = resolve_session(opened, session_id)
        info = opened.info(session_id)
        length = opened.length(session_id)
        children = _child_tree(opened, info)
        if as_json:
            projection = project(opened.events(session_id, skip_types=("assistant/chunk",)))
            typer.echo(
                json.dumps(
                    {
                        "session": _info_json(info, length),
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
        parent = "" if info.parent_id is None else f", forked from {info.parent_id} at {info.seed_length}"
        console.print(
            f"[bold]session {info.id}[/]: {_events(length)}, created {_when(info.created_at)} UTC{parent}"
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
        for event in opened.events(session_id, skip_types=("assistant/chunk",)):
            _render(console, event, spawned)


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

    Example: dsh sessions export 01J5Z3... -o session.jsonl
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
    console = terminal_stderr()
    with _open(store) as opened:
        if console is None:
            info = import_jsonl(opened, file, limits=JsonLimits(max_line=max_line))
        else:
            with ByteProgress(console, f"importing {file.name}", file.stat().st_size) as progress:
                info = import_jsonl(opened, file, progress=progress, limits=JsonLimits(max_line=max_line))
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

    Example: dsh sessions fork 01J5Z3... --at 41
    """
    with _open(store, session_id) as opened:
        session_id = resolve_session(opened, session_id)
        child = opened.fork(session_id, at)
    if as_json:
        typer.echo(json.dumps({"id": child.id, "seedLength": child.seed_length}))
    else:
        typer.echo(f"forked {session_id} at seq {(child.seed_length or 0) - 1} as session {child.id}")
