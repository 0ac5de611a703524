"""The `grep` tool's work: lines matching a regular expression, grouped by file (newest file first, lines in
order), capped. RE2 is the engine, so a match costs time linear in the line whatever the pattern; the search checks
for cancellation between files and every few thousand lines, so Ctrl-C stops it at once."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import re2

from runtime.tools import ToolResult

from .errors import FILE_NOT_FOUND, INVALID_PATTERN, UNSUPPORTED_PATTERN, FsError
from .find import search_directory
from .globs import GlobMatcher
from .paths import Workspace
from .read import SNIFF_BYTES, is_binary_prefix
from .walk import FoundFile, walk_files

__all__ = ["GrepLimits", "Regex", "compile_pattern", "grep_files"]

_CHECK_EVERY_LINES = 4096
"""How many lines are matched between two cancellation checks: RE2 keeps each line's cost linear, so this bounds
the delay before a cancelled search stops to a few milliseconds."""

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is the model's error result, not a line on dsh's stderr


class Regex(Protocol):
    """A compiled pattern, as grep uses it."""

    def search(self, text: str) -> object | None: ...


@dataclass(frozen=True, kw_only=True)
class GrepLimits:
    max_matches: int
    max_line_chars: int
    exclude_dirs: tuple[str, ...]


def compile_pattern(pattern: str) -> Regex:
    """`pattern` compiled by RE2. A pattern that is not a regular expression at all is refused with Python's
    diagnosis (the clearer one); a valid one that needs backtracking (backreferences, lookaround) is refused as
    unsupported, naming what RE2 could not take."""
    try:
        regex: Regex = re2.compile(pattern, _RE2_OPTIONS)
        return regex
    except re2.error as error:
        reason = error.args[0].decode("utf-8", "replace") if error.args else str(error)
    try:
        re.compile(pattern)  # compiled for its diagnosis only; it never matches anything here
    except re.error as error:
        raise FsError(
            INVALID_PATTERN, f'grep pattern "{pattern}" is not a valid regular expression: {error}'
        ) from error
    raise FsError(
        UNSUPPORTED_PATTERN,
        f'grep pattern "{pattern}" is not supported: {reason}. grep matches in linear time (RE2 syntax), '
        "so backreferences (\\1) and lookaround ((?=...), (?!...), (?<=...), (?<!...)) are not available; "
        "rewrite the pattern without them, or search more broadly and read the candidates",
    )


def _never_cancelled() -> None:
    return None


def grep_files(
    workspace: Workspace,
    pattern: str,
    raw_path: str | None,
    include: str | None,
    limits: GrepLimits,
    *,
    check_cancelled: Callable[[], None] = _never_cancelled,
) -> ToolResult:
    """Run one grep. `check_cancelled` is called between files and every few thousand lines; it raises to stop the
    search (in a worker thread: `anyio.from_thread.check_cancelled`)."""
    regex = compile_pattern(pattern)
    matcher = GlobMatcher.compile(include, what="include") if include else None
    files = _files(workspace, raw_path, limits.exclude_dirs, check_cancelled)
    if matcher is not None:
        files = [f for f in files if matcher.matches(f.relative)]
    files.sort(key=lambda f: (-f.mtime, f.path))
    groups: list[tuple[str, list[tuple[int, str]]]] = []
    count = 0
    truncated = False
    for found in files:
        check_cancelled()
        hits = _search(Path(found.real), regex, check_cancelled)
        if not hits:
            continue
        room = limits.max_matches - count
        if len(hits) > room:
            hits, truncated = hits[:room], True
        if hits:
            groups.append((workspace.show(found.path), hits))
            count += len(hits)
        if truncated:
            break
    if not groups:
        return ToolResult("No files found", meta={"matches": 0, "truncated": False})
    lines = [f"Found {count} matches"]
    for index, (shown, hits) in enumerate(groups):
        if index:
            lines.append("")
        lines.append(f"{shown}:")
        for number, text in hits:
            if len(text) > limits.max_line_chars:
                text = text[: limits.max_line_chars] + "..."
            lines.append(f"  Line {number}: {text}")
    if truncated:
        lines += [
            "",
            f"(Results are truncated at {limits.max_matches} matches. Use a more specific pattern, path or include.)",
        ]
    return ToolResult("\n".join(lines), meta={"matches": count, "truncated": truncated})


def _files(
    workspace: Workspace,
    raw_path: str | None,
    exclude_dirs: tuple[str, ...],
    check_cancelled: Callable[[], None],
) -> list[FoundFile]:
    """The files to search: those below the directory `raw_path` names, or that one file."""
    if raw_path:
        real = workspace.resolve(raw_path)
        if real.is_file():
            return [FoundFile(path=str(real), relative=real.name, real=str(real), mtime=real.stat().st_mtime)]
        if not real.exists():
            raise FsError(FILE_NOT_FOUND, f"Path not found: {workspace.show(real)}")
    top = search_directory(workspace, raw_path)
    found = []
    for file in walk_files(workspace, str(top), exclude_dirs):
        check_cancelled()
        found.append(file)
    return found


def _search(real: Path, regex: Regex, check_cancelled: Callable[[], None]) -> list[tuple[int, str]]:
    """The (line number, line) pairs of a text file that `regex` finds a match in; nothing for a binary file."""
    try:
        data = real.read_bytes()
    except OSError:
        return []  # unreadable (permissions, vanished): a search skips it as ripgrep does
    if is_binary_prefix(data[:SNIFF_BYTES]):
        return []
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    hits: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if not number % _CHECK_EVERY_LINES:
            check_cancelled()
        line = line.removesuffix("\r")
        if regex.search(line):
            hits.append((number, line))
    return hits
