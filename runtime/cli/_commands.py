"""The `dsh` command table, importing nothing but `os` and `sys`: the core commands (name, target, one line of help),
the commands that plugins add through the `dsh.commands` entry-point group (read from the installed distributions'
`entry_points.txt` without `importlib.metadata`), the root options, and the root `dsh --help` rendered from them
as typer renders it (plain to a file, styled to a terminal), so `dsh --help` answers before typer or rich is
imported.

The typer app (`dsh.runtime.cli.app`) is built from this same table; `tests/runtime/cli` checks the help here is exactly
what typer prints for it, plain and styled, at several widths. What is not copied here (typer shrinking a column to
fit a narrow terminal, NO_COLOR's bold without colour, highlighting of text other than `--name`) goes to typer."""

from __future__ import annotations

import os
import sys

__all__ = [
    "CORE_COMMANDS",
    "ENTRY_POINT_GROUP",
    "HELP_OPTION_HELP",
    "ROOT_HELP",
    "ROOT_OPTIONS",
    "COMPLETION_OPTIONS",
    "LazyCommand",
    "entry_point_commands",
    "root_help",
]

ENTRY_POINT_GROUP = "dsh.commands"


class LazyCommand:
    """A command known by name before its module is imported: `target` is "module:attribute" (a `typer.Typer`
    becomes a command group, a function a command) and `summary` the line `dsh --help` shows for it."""

    __slots__ = ("summary", "target")

    def __init__(self, target: str, summary: str) -> None:
        self.target = target
        self.summary = summary

    def __repr__(self) -> str:
        return f"LazyCommand({self.target!r}, {self.summary!r})"


CORE_COMMANDS: dict[str, LazyCommand] = {
    "prompt": LazyCommand(
        "dsh.runtime.cli.prompt_cmd:prompt",
        "Print the system prompt and tool schemas a deployment would send.",
    ),
    "run": LazyCommand("dsh.runtime.cli.run_cmd:run", "Run one turn headless and stream it to the terminal."),
    "chat": LazyCommand(
        "dsh.runtime.cli.chat_cmd:chat",
        "Talk with the deployment's agent in the terminal, one turn per line you type.",
    ),
    "config": LazyCommand("dsh.runtime.cli.config_cmd:config_app", "Deployment config files."),
    "sessions": LazyCommand(
        "dsh.runtime.cli.sessions_cmd:sessions_app",
        "Session logs: list, show, stats, title, trace, export, import, fork, copy, tail.",
    ),
}
"""The core commands, in the order `dsh --help` lists them; a test checks each summary is its command's own."""

ROOT_HELP = (
    "dsh: an event-sourced agent runtime with replay testing.\n\nExample: dsh chat --config coding-agent"
)
ROOT_OPTIONS: dict[str, str] = {
    "--debug": "Print the traceback of an error instead of one line.",
    "--version": "Print the version and exit.",
}
"""The root group's own options (all flags), with their help, in the order `dsh --help` lists them."""
COMPLETION_OPTIONS: dict[str, str] = {
    "--install-completion": "Install completion for the current shell.",
    "--show-completion": "Show completion for the current shell, to copy it or customize the installation.",
}
"""typer's shell-completion options (flags), with their help, listed after the root options."""
HELP_OPTION_HELP = "Show this message and exit."
"""click's help for `--help`, which `dsh --help` lists after the root options."""

_METADATA_DIRS = (".dist-info", ".egg-info")


def _normalized(distribution: str) -> str:
    return distribution.lower().replace("-", "_").replace(".", "_")


def _group_entries(text: str, group: str) -> list[tuple[str, str]]:
    """The `name = value` lines of one section of an `entry_points.txt` (an INI file, one line each)."""
    found: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
            continue
        if inside and "=" in line:
            name, _, value = line.partition("=")
            found.append((name.strip(), value.strip()))
    return found


def _entry_points(group: str) -> list[tuple[str, str]]:
    """(name, "module:attribute") of every entry point in `group`, as `importlib.metadata.entry_points` finds them:
    the distributions on `sys.path` in order, a distribution met twice read once (its first copy)."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for entry in sys.path:
        directory = entry or "."
        try:
            names = os.listdir(directory)
        except OSError:  # a zip or a missing directory on sys.path holds no metadata directory we read
            continue
        for name in names:
            suffix = next((s for s in _METADATA_DIRS if name.endswith(s)), None)
            if suffix is None:
                continue
            distribution = _normalized(name.removesuffix(suffix).partition("-")[0])
            if distribution in seen:
                continue
            try:
                with open(os.path.join(directory, name, "entry_points.txt"), encoding="utf-8") as handle:
                    text = handle.read()
            except OSError:  # no entry points: still this distribution's first copy
                seen.add(distribution)
                continue
            seen.add(distribution)
            found += _group_entries(text, group)
    return found


def entry_point_commands() -> dict[str, LazyCommand]:
    """The commands other distributions add (`dsh.commands`), by name; a core command's name is never taken."""
    found: dict[str, LazyCommand] = {}
    for name, value in _entry_points(ENTRY_POINT_GROUP):
        if name not in CORE_COMMANDS and name not in found:
            module = value.partition(":")[0].strip()
            found[name] = LazyCommand(
                value, f"A command from {module}: `dsh {name} --help` says what it does."
            )
    return found


def _width() -> int:
    # as typer's console finds it: TERMINAL_WIDTH, else COLUMNS, else the terminal on stdin/stdout/stderr, else 80
    for variable in ("TERMINAL_WIDTH", "COLUMNS"):
        value = os.environ.get(variable, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    for descriptor in (0, 1, 2):
        try:
            columns = os.get_terminal_size(descriptor).columns
        except (OSError, ValueError):
            continue
        if columns:
            return columns
    return 80


def _output_style() -> str | None:
    """How typer would print to stdout here: "plain" (not a terminal, no colour forced), "styled" (a terminal, or
    colour forced, with colour), or None for what this module leaves to typer (NO_COLOR's bold without colour, a
    dumb terminal, rich's TTY_* switches)."""
    if any(name in os.environ for name in ("TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return None
    try:
        terminal = sys.stdout.isatty()
        encoding = (sys.stdout.encoding or "").lower()
    except (AttributeError, ValueError):  # no stdout, or a closed one
        return None
    if not encoding.startswith("utf"):
        return None  # rich draws ASCII boxes there
    if os.environ.get("_TYPER_FORCE_DISABLE_TERMINAL"):
        return "plain"  # typer's switch for tests: never a terminal, whatever stdout is
    forced = any(os.environ.get(name) for name in ("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS"))
    if not terminal and not forced:
        return "plain"
    if "NO_COLOR" in os.environ or os.environ.get("TERM", "") in ("dumb", "unknown"):
        return None
    return "styled"


_Piece = tuple[str, str]
"""A run of text and the SGR parameters it is drawn with ("" for none), cut where rich cuts its segments."""
_OPTION = "1;36"
_DIM = "2"


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _highlighted(text: str, base: str = "") -> list[_Piece] | None:
    """`text` (drawn in `base`) with typer's highlighting of option names: each `--name` bold cyan, in two pieces
    ("-" and "-name": rich cuts at the ends of both highlighter matches). None for text whose rendering this does
    not copy: rich markup or a metavar (`[`, `<`), an emoji code (`:name:`), a lone `-x`, a `--name-` or `--name--x`."""
    if "[" in text or "<" in text:
        return None
    colon = text.find(":")
    while colon != -1:
        after = text.find(":", colon + 1)
        if after != -1 and after > colon + 1 and not any(c.isspace() for c in text[colon + 1 : after]):
            return None
        colon = after
    style = _OPTION if not base else f"1;{base};36"
    pieces: list[_Piece] = []
    plain_from = 0
    at = 0
    while at < len(text):
        if text[at] != "-" or (at > 0 and (_word_char(text[at - 1]) or text[at - 1] == "-")):
            at += 1
            continue
        end = at + 1
        while end < len(text) and (_word_char(text[end]) or text[end] == "-"):
            end += 1
        name = text[at + 1 : end]
        if not name or not name.startswith("-"):
            if name:
                return None  # a switch (-x): not copied
            at += 1
            continue
        if len(name) == 1 or name.endswith("-") or "--" in name[1:]:
            return None
        if plain_from < at:
            pieces.append((text[plain_from:at], base))
        # `--name-more`: the switch highlighter matches `-name` too, so rich cuts there as well
        cut = name.find("-", 1)
        parts = [name] if cut == -1 else [name[:cut], name[cut:]]
        pieces += [("-", style), *((part, style) for part in parts)]
        plain_from = at = end
    if plain_from < len(text):
        pieces.append((text[plain_from:], base))
    return pieces


def _drawn(pieces: list[_Piece], styled: bool) -> str:
    if not styled:
        return "".join(text for text, _ in pieces)
    return "".join(f"\x1b[{sgr}m{text}\x1b[0m" if sgr else text for text, sgr in pieces)


def _length(pieces: list[_Piece]) -> int:
    return sum(len(text) for text, _ in pieces)


def _wrapped(words: str, width: int) -> list[str] | None:
    """`words` wrapped greedily at spaces to `width`, as rich wraps a table cell; None if a word alone is wider."""
    lines: list[str] = []
    for word in words.split():
        if len(word) > width:
            return None
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


_Row = tuple[list[_Piece], list[_Piece], str]
"""A panel row: its fixed columns' first line, their continuation lines, and the help that wraps beside them."""


def _panel(title: str, rows: list[_Row], width: int) -> list[list[_Piece]] | None:
    """A typer help panel, its rows' help wrapped under its own column."""
    inner = width - 4
    out: list[list[_Piece]] = [
        [("╭─", _DIM), (f" {title} ", _DIM), ("─" * (width - len(title) - 6), _DIM), ("─╮", _DIM)]
    ]
    for first, more, help in rows:
        fixed = _length(first)
        lines = _wrapped(help, inner - fixed)
        if lines is None or fixed + _MIN_HELP > inner:
            return None
        for n, line in enumerate(lines):
            text = _highlighted(line)
            if text is None:
                return None
            pad = " " * (inner - fixed - len(line))
            out.append(
                [("│", _DIM), (" ", ""), *(first if n == 0 else more), *text, (pad + " ", ""), ("│", _DIM)]
            )
    return [*out, [("╰" + "─" * (width - 2) + "╯", _DIM)]]


_MIN_HELP = 20
"""The narrowest help column rendered here; typer shrinks its other columns below that, which this leaves to it."""
_USAGE = "dsh [OPTIONS] COMMAND [ARGS]..."


def root_help(width: int | None = None, *, styled: bool | None = None) -> str | None:
    """`dsh --help` exactly as typer prints it at `width` (default: as typer finds it), plain (to a file) or styled
    (to a terminal; default: as typer would choose), or None where that needs typer itself: a line it would have to
    shrink a column for, text whose highlighting is not copied here, or an output `_output_style` leaves to it."""
    if styled is None:
        style = _output_style()
        if style is None:
            return None
        styled = style == "styled"
    width = _width() if width is None else width
    commands = {name: lazy.summary for name, lazy in CORE_COMMANDS.items()}
    for name, lazy in entry_point_commands().items():
        commands[name] = lazy.summary
    options = {**ROOT_OPTIONS, **COMPLETION_OPTIONS, "--help": HELP_OPTION_HELP}
    usage_pad = width - 2 - len("Usage: ") - len(_USAGE)
    if usage_pad < 0:
        return None
    lines: list[list[_Piece]] = [
        [(" " * width, "1")],
        [(" ", "1"), ("Usage: ", "1;33"), (_USAGE, "1"), (" " * usage_pad, "1"), (" ", "1")],
        [(" " * width, "1")],
    ]
    for number, paragraph in enumerate(ROOT_HELP.split("\n\n")):
        text = _highlighted(paragraph.replace("\n", " "), "" if number == 0 else _DIM)
        if text is None or _length(text) > width - 1:
            return None
        lines += [[(" ", ""), *text, (" " * (width - 1 - _length(text)), "")], [(" " * width, "")]]
    option_width = max(map(len, options))
    option_rows: list[_Row] = []
    for name, help in options.items():
        named = _highlighted(name)
        if named is None:
            return None
        # every root option is a flag: typer draws no type for it (app.py), so its type column is empty
        first = [*named, (" " * (option_width - len(name) + 8), ""), ("  ", "")]
        option_rows.append((first, [(" " * _length(first), "")], help))
    command_width = max(map(len, commands))
    command_rows: list[_Row] = [
        (
            [(name.ljust(command_width), _OPTION), (" ", _OPTION), (" ", "")],
            [(" " * (command_width + 1), _OPTION), (" ", "")],
            summary,
        )
        for name, summary in commands.items()
    ]
    for panel in (_panel("Options", option_rows, width), _panel("Commands", command_rows, width)):
        if panel is None:
            return None
        lines += panel
    return "\n".join(_drawn(line, styled) for line in lines) + "\n\n"
