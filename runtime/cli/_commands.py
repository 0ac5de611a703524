"""The `dsh` command table, importing nothing but `os` and `sys`: the core commands (name, target, one line of help),
the commands that plugins add through the `dsh.commands` entry-point group (read from the installed distributions'
`entry_points.txt` without `importlib.metadata`), the root options, and the root `dsh --help` rendered from them
as plain text, so `dsh --help` answers before typer or rich is imported.

The typer app (`runtime.cli.app`) is built from this same table; `tests/runtime/cli` checks the plain help here is
exactly what typer prints for it. The plain rendering is used only where typer's would be plain too (stdout not a
terminal, no colour forced) and everything fits the width without wrapping; anything else goes to typer."""

from __future__ import annotations

import os
import sys

__all__ = [
    "CORE_COMMANDS",
    "ENTRY_POINT_GROUP",
    "HELP_OPTION_HELP",
    "ROOT_HELP",
    "ROOT_OPTIONS",
    "LazyCommand",
    "entry_point_commands",
    "plain_root_help",
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
        "runtime.cli.prompt_cmd:prompt", "Print the system prompt and tool schemas a deployment would send."
    ),
    "run": LazyCommand("runtime.cli.run_cmd:run", "Run one turn headless and stream it to the terminal."),
    "chat": LazyCommand(
        "runtime.cli.chat_cmd:chat",
        "Talk with the deployment's agent in the terminal, one turn per line you type.",
    ),
    "config": LazyCommand("runtime.cli.config_cmd:config_app", "Deployment config files."),
    "sessions": LazyCommand(
        "runtime.cli.sessions_cmd:sessions_app", "Session logs: list, show, export, import, fork, copy, tail."
    ),
}
"""The core commands, in the order `dsh --help` lists them; a test checks each summary is its command's own."""

ROOT_HELP = (
    "dsh: an event-sourced agent runtime with replay testing.\n\n"
    "Example: dsh chat --config examples/coding-agent.yml"
)
ROOT_OPTIONS: dict[str, str] = {
    "--debug": "Print the traceback of an error instead of one line.",
    "--version": "Print the version and exit.",
}
"""The root group's own options (all flags), with their help, in the order `dsh --help` lists them."""
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


def _plain_output() -> bool:
    """Whether typer would print plain text here: stdout not a terminal, and no colour forced on it."""
    forced = ("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
    if any(os.environ.get(name) for name in forced):
        return False
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):  # no stdout, or a closed one
        return False


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


def _panel(title: str, rows: list[tuple[str, str]], width: int) -> list[str] | None:
    """A typer help panel: `rows` of (the fixed columns, the help that wraps under its own column)."""
    inner = width - 4
    out = [f"╭─ {title} " + "─" * (width - len(title) - 5) + "╮"]
    for fixed, help in rows:
        lines = _wrapped(help, inner - len(fixed))
        if lines is None or len(fixed) + _MIN_HELP > inner:
            return None
        out += [
            f"│ {(fixed if n == 0 else ' ' * len(fixed)) + line:<{inner}} │" for n, line in enumerate(lines)
        ]
    return [*out, "╰" + "─" * (width - 2) + "╯"]


_MIN_HELP = 30
"""The narrowest help column rendered here; typer shrinks its other columns below that, which this leaves to it."""


def plain_root_help(width: int | None = None) -> str | None:
    """`dsh --help` as typer prints it to a file (no terminal, no colour) at `width` (default: as typer finds it),
    or None when that needs typer itself: a line that would wrap, or a terminal that gets typer's colours."""
    if width is None:
        if not _plain_output():
            return None
        width = _width()
    commands = {name: lazy.summary for name, lazy in CORE_COMMANDS.items()}
    for name, lazy in entry_point_commands().items():
        commands[name] = lazy.summary
    options = {**ROOT_OPTIONS, "--help": HELP_OPTION_HELP}
    text = [" Usage: dsh [OPTIONS] COMMAND [ARGS]...", ""]
    for paragraph in ROOT_HELP.split("\n\n"):
        text += [" " + paragraph.replace("\n", " "), ""]
    if any(len(line) > width - 1 for line in text):
        return None
    option_width = max(map(len, options))
    option_rows = [(f"{name.ljust(option_width)}        <bool>  ", help) for name, help in options.items()]
    command_width = max(map(len, commands))
    command_rows = [(f"{name.ljust(command_width)}  ", summary) for name, summary in commands.items()]
    panels = [_panel("Options", option_rows, width), _panel("Commands", command_rows, width)]
    if panels[0] is None or panels[1] is None:
        return None
    lines = [" " * width, *(line.ljust(width) for line in text), *panels[0], *panels[1], ""]
    return "\n".join(lines) + "\n"
