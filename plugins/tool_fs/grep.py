"""The `grep` tool's work: lines matching a regular expression, grouped by file (newest file first, lines in
order), capped; Python's `re` is the engine."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runtime.tools import ToolResult

from .errors import FILE_NOT_FOUND, INVALID_PATTERN, FsError
from .find import search_directory
from .globs import GlobMatcher
from .paths import Workspace
from .read import SNIFF_BYTES, is_binary_prefix
from .walk import FoundFile, walk_files

__all__ = ["GrepLimits", "compile_pattern", "grep_files"]


@dataclass(frozen=True, kw_only=True)
class GrepLimits:
    max_matches: int
    max_line_chars: int
    exclude_dirs: tuple[str, ...]


def compile_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise FsError(
            INVALID_PATTERN, f'grep pattern "{pattern}" is not a valid regular expression: {error}'
        ) from error


def grep_files(
    workspace: Workspace, pattern: str, raw_path: str | None, include: str | None, limits: GrepLimits
) -> ToolResult:
    regex = compile_pattern(pattern)
    matcher = GlobMatcher.compile(include, what="include") if include else None
    files = _files(workspace, raw_path, limits.exclude_dirs)
    if matcher is not None:
        files = [f for f in files if matcher.matches(f.relative)]
    files.sort(key=lambda f: (-f.mtime, f.path))
    groups: list[tuple[str, list[tuple[int, str]]]] = []
    count = 0
    truncated = False
    for found in files:
        hits = _search(Path(found.real), regex)
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


def _files(workspace: Workspace, raw_path: str | None, exclude_dirs: tuple[str, ...]) -> list[FoundFile]:
    """The files to search: those below the directory `raw_path` names, or that one file."""
    if raw_path:
        real = workspace.resolve(raw_path)
        if real.is_file():
            return [FoundFile(path=str(real), relative=real.name, real=str(real), mtime=real.stat().st_mtime)]
        if not real.exists():
            raise FsError(FILE_NOT_FOUND, f"Path not found: {workspace.show(real)}")
    top = search_directory(workspace, raw_path)
    return list(walk_files(workspace, str(top), exclude_dirs))


def _search(real: Path, regex: re.Pattern[str]) -> list[tuple[int, str]]:
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
        line = line.removesuffix("\r")
        if regex.search(line):
            hits.append((number, line))
    return hits
