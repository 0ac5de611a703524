"""`dsh sessions list` without typer or rich: every session in its `--json` form (`listed`: `SessionInfo`'s fields
and its event count), the rows of the sessions table made from it (each parent followed by its forks and subagents),
the table drawn as rich draws it to a file, and the `--json` list. `sessions_cmd` builds its rich table from the same
rows; `run_fast` answers `dsh sessions list [--store STORE] [--json]` (or `$DSH_STORE`) from `_entry` before typer,
rich or msgspec is imported, from the plain rows of the store file (`dsh.runtime.session.read_listing`), and leaves
anything else (a terminal, which gets rich's styles; a table that would wrap; a store to create, migrate or refuse;
a PostgreSQL URL) to typer, which prints the same table, or the error, as it always has."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the fast path more than the store does
    from typing import Any

    from dsh.runtime.session import SessionInfo, SessionStoreProtocol

__all__ = [
    "COLUMNS",
    "PIPED_WIDTH",
    "USAGE_COLUMNS",
    "from_rows",
    "in_tree_order",
    "info_json",
    "link",
    "listed",
    "plain_table",
    "run_fast",
    "session_rows",
    "sessions_json",
    "table_rows",
    "when",
]

COLUMNS = ("id", "created (UTC)", "events", "parent", "cwd")
"""The table's columns; the first (ids, copied into --session) never folds, the others fold to fit."""
USAGE_COLUMNS = ("title", "tokens in/out/cache · cost")
"""The columns `--usage` adds (typer's path only: the fast path never reads a session's events)."""


PIPED_WIDTH = 100_000
"""The table's width when stdout is not a terminal and `COLUMNS` is unset: wide enough that no row is folded, so a
script reading `dsh sessions list | ...` gets one line per session."""


def when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _how(seed_length: int | None) -> str:
    """A fork as `fork @N`, N its last inherited seq (as `dsh sessions fork --at N` and chat's /fork number it), or
    `spawned`."""
    if seed_length is None:
        return "spawned"
    return f"fork @{seed_length - 1}" if seed_length else "fork @-"  # `-`: it inherited nothing


def link(info: SessionInfo, *, call: bool = True) -> str:
    """How a child hangs off its parent: a fork at its seed length, or spawned fresh; and the call that started it."""
    how = _how(info.seed_length)
    if call and info.spawned_by is not None:
        by = info.spawned_by
        how += f", by turn {by.turn} step {by.step} call {by.call_id}"
    return how


def info_json(info: SessionInfo, length: int) -> dict[str, Any]:
    """A session's `--json` form: its `SessionInfo` fields, and `events`, its log's length."""
    import msgspec

    data: dict[str, Any] = msgspec.to_builtins(info)
    data["events"] = length
    return data


def listed(store: SessionStoreProtocol) -> list[dict[str, Any]]:
    """Every session of `store`, oldest first, in its `--json` form (`info_json`)."""
    return [info_json(info, store.length(info.id)) for info in store.sessions()]


def from_rows(listing: list[tuple[tuple[Any, ...], int]], *, spawned_by: bool = True) -> list[dict[str, Any]]:
    """`listed` from the plain rows of `dsh.runtime.session.read_listing`, without msgspec: each row's columns are named
    after `SessionInfo`'s fields and hold them as `SessionInfo` stores them (`inherits` as 0 or 1, `spawned_by` as
    the JSON of its `to_builtins` form). The table never shows `spawned_by`: `spawned_by=False` leaves it undecoded
    (json, and the re it imports, are for `--json` alone)."""
    from dsh.runtime.session.store._listing import SESSION_COLUMNS

    names = SESSION_COLUMNS.split(", ")
    sessions = []
    for row, length in listing:
        data = dict(zip(names, row, strict=True))
        data["inherits"] = bool(data["inherits"])
        if spawned_by and data["spawned_by"] is not None:
            import json

            data["spawned_by"] = json.loads(data["spawned_by"])
        data["events"] = length
        sessions.append(data)
    return sessions


def in_tree_order(sessions: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """Every session (`listed`) with its depth in the parent/child tree: each parent (oldest first) followed by its
    children. A child names its parent by id, or, once imported, by the id its parent had in its file
    (`imported_from`)."""
    claims: dict[str, dict[str, Any]] = {}
    for data in sessions:
        claims[data["id"]] = data
        if data["imported_from"] is not None:
            claims.setdefault(data["imported_from"], data)
    children: dict[str, list[dict[str, Any]]] = {}
    roots = []
    for data in sessions:
        parent = claims.get(data["parent_id"]) if data["parent_id"] is not None else None
        if parent is None or parent["id"] == data["id"]:
            roots.append(data)
        else:
            children.setdefault(parent["id"], []).append(data)
    ordered: list[tuple[dict[str, Any], int]] = []
    seen: set[str] = set()

    def visit(data: dict[str, Any], depth: int) -> None:
        if data["id"] in seen:
            return
        seen.add(data["id"])
        ordered.append((data, depth))
        for child in children.get(data["id"], ()):
            visit(child, depth + 1)

    for data in roots:
        visit(data, 0)
    for data in sessions:  # a cycle of parents (hand-made imports) has no root; list it anyway
        visit(data, 0)
    return ordered


def table_rows(
    sessions: list[dict[str, Any]],
    *,
    current: str | None = None,
    usage: dict[str, tuple[str, str]] | None = None,
) -> tuple[str, list[tuple[str, ...]]]:
    """The table's title and rows (one cell per column of `COLUMNS`) of `sessions` (`listed`), each parent's forks
    and subagents indented under it (`current`, when given, is marked with `*`; `usage`, when given, adds the
    `USAGE_COLUMNS` cells of each session)."""
    rows: list[tuple[str, ...]] = []
    ordered = in_tree_order(sessions)
    branch = _branch()
    for data, depth in ordered:
        tree = "" if depth == 0 else "  " * (depth - 1) + branch
        mark = "* " if data["id"] == current else ""
        parent = "-" if data["parent_id"] is None else f"{data['parent_id']} ({_how(data['seed_length'])})"
        rows.append(
            (
                tree + mark + data["id"],
                when(data["created_at"]),
                str(data["events"]),
                parent,
                data["cwd"] or "-",
                *(() if usage is None else usage.get(data["id"], ("-", "-"))),
            )
        )
    return f"{len(ordered)} session{'' if len(ordered) == 1 else 's'}", rows


def _branch() -> str:
    """What hangs a child under its parent: `└ `, or `` `- `` where stdout cannot encode it (rich then draws the
    table's box in ASCII too)."""
    try:
        "└".encode(sys.stdout.encoding or "utf-8")
    except (AttributeError, LookupError, UnicodeEncodeError, ValueError):
        return "`- "
    return "└ "


def session_rows(
    store: SessionStoreProtocol,
    *,
    current: str | None = None,
    usage: dict[str, tuple[str, str]] | None = None,
) -> tuple[str, list[tuple[str, ...]]]:
    """`table_rows` of the store's sessions."""
    return table_rows(listed(store), current=current, usage=usage)


def sessions_json(store: SessionStoreProtocol) -> str:
    """`dsh sessions list --json`: every session, oldest first, with its event count."""
    import json  # the table never needs it

    return json.dumps(listed(store))


def _plain_cell(text: str) -> bool:
    # what rich prints as it is: no markup ([), no emoji code (:name:), one column per character
    return "[" not in text and ":" not in text and all(" " <= c <= "~" or c == "└" for c in text)


def plain_table(title: str, rows: list[tuple[str, ...]], width: int) -> str | None:
    """The table as rich draws it to a file `width` columns wide (heavy head, title centred above), or None when
    rich would have to fold a cell to fit, or might read a cell as markup or an emoji code."""
    if not all(_plain_cell(cell) for row in rows for n, cell in enumerate(row) if n != 1):
        return None
    widths = [max(len(cell) for cell in column) for column in zip(COLUMNS, *rows, strict=False)]
    total = sum(widths) + 3 * len(widths) + 1
    if total > width or len(title) > total:
        return None
    left = (total - len(title)) // 2

    def line(cells: tuple[str, ...], edge: str) -> str:
        return edge + edge.join(f" {cell.ljust(w)} " for cell, w in zip(cells, widths, strict=True)) + edge

    def rule(start: str, fill: str, cross: str, end: str) -> str:
        return start + cross.join(fill * (w + 2) for w in widths) + end

    lines = [
        " " * left + title + " " * (total - len(title) - left),
        rule("┏", "━", "┳", "┓"),
        line(COLUMNS, "┃"),
        rule("┡", "━", "╇", "┩"),
        *(line(row, "│") for row in rows),
        rule("└", "─", "┴", "┘"),
    ]
    return "\n".join(lines) + "\n"


def _console_width() -> int:
    # as `sessions_cmd` sets rich's Console for a stdout that is not a terminal: COLUMNS, else no folding
    value = os.environ.get("COLUMNS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return PIPED_WIDTH


def _plain_stdout() -> bool:
    """Whether rich would print plain text to stdout: not a terminal, and no colour or terminal forced."""
    if any(
        os.environ.get(name)
        for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")
    ):
        return False
    try:
        return not sys.stdout.isatty() and (sys.stdout.encoding or "").lower().startswith("utf")
    except (
        AttributeError,
        ValueError,
    ):  # no stdout, or a closed one; rich draws ASCII boxes in other encodings
        return False


def _options(args: list[str]) -> tuple[str | None, bool] | None:
    """`--store STORE` (else `$DSH_STORE`) and `--json` as typer would read them, or None for anything else
    (typer's to answer)."""
    store: str | None = None
    as_json = False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json" and not as_json:
            as_json = True
        elif arg.startswith("--store=") and store is None and len(arg) > len("--store="):
            store = arg.removeprefix("--store=")
        elif arg == "--store" and store is None and rest and rest[0] and not rest[0].startswith("-"):
            store = rest.pop(0)
        else:
            return None
    if store is None and "DSH_STORE" in os.environ:
        store = os.environ["DSH_STORE"]
        if not store:
            return None  # an empty $DSH_STORE: whatever click makes of it
    return store, as_json


def run_fast(args: list[str]) -> bool:
    """Answer `dsh sessions list` (the `args` after it) and return True, or return False (having printed nothing,
    and changed nothing) for typer to answer: options other than `--store` and `--json`, a PostgreSQL URL, a store
    file that opening would create, migrate or refuse (typer's path does, or reports it), or a table rich must draw
    itself. The list is read-only, so answering it twice is harmless."""
    options = _options(args)
    if options is None:
        return False
    store, as_json = options
    if not as_json and not _plain_stdout():
        return False  # a terminal gets rich's styles
    from dsh.runtime.host import existing_store_file
    from dsh.runtime.session import read_listing

    path = existing_store_file(store)
    listing = None if path is None else read_listing(path)
    if listing is None:
        return False
    try:
        sessions = from_rows(listing, spawned_by=as_json)
    except ValueError:  # a hand-made row msgspec would refuse too: typer's path reports it
        return False
    if as_json:
        import json

        text: str | None = json.dumps(sessions) + "\n"
    else:
        text = plain_table(*table_rows(sessions), _console_width())
    if text is None:
        return False
    sys.stdout.write(text)
    return True
