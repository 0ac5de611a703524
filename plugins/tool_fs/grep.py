"""The `grep` tool's work: lines matching a regular expression, grouped by file (newest file first, lines in
order), capped. RE2 is the engine, so a match costs time linear in the line whatever the pattern; the search checks
for cancellation between files and between blocks of lines, so Ctrl-C stops it at once.

Each line is matched on its own. For speed a block of lines is first searched as one text with the pattern in
multi-line mode (`^`/`$` at line ends): a block with no match there has no matching line, so only blocks that do
are matched line by line. The block search can only over-report (a match across lines), never miss a line, except
for patterns that anchor to the whole text (`\\A`, `\\z`) or switch multi-line mode off; those skip it."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, Protocol

import re2

from dsh.runtime.tools import ToolResult

from .errors import FILE_NOT_FOUND, INVALID_PATTERN, UNSUPPORTED_PATTERN, FsError
from .find import search_directory
from .globs import GlobMatcher
from .paths import Workspace
from .read import SNIFF_BYTES, is_binary_prefix
from .walk import FoundFile, walk_files

__all__ = [
    "DEFAULT_LINE_CAP",
    "GrepLimits",
    "Hits",
    "Regex",
    "compile_pattern",
    "grep_files",
    "search_stream",
]

DEFAULT_LINE_CAP = 1 << 20
"""The bytes of one line grep keeps (`grep_max_line_bytes`): a longer line is searched in its first bytes only."""
_READ_BYTES = 1 << 18
"""How much of a file is read at a time: with the line cap, the bound on the memory one search holds."""
_BLOCK_BYTES = 32_768
"""The size of a block of whole lines: searched as one text first, with a cancellation check between two blocks
(RE2 keeps a block's cost linear, so a cancelled search stops within milliseconds)."""

_WHOLE_TEXT = re.compile(r"\\[Az]|\(\?[a-zA-Z]*-")
"""What makes a pattern's meaning depend on seeing one line at a time: `\\A`/`\\z`, or a flag group turning a flag
(perhaps multi-line mode) off. Over-matching here only costs speed."""

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is the model's error result, not a line on dsh's stderr


class Match(Protocol):
    def span(self) -> tuple[int, int]: ...


class Regex(Protocol):
    """A compiled RE2 pattern, as grep uses it: searched over UTF-8 bytes."""

    def search(self, text: bytes, pos: int = ..., endpos: int = ...) -> Match | None: ...


@dataclass(frozen=True)
class Pattern:
    """A grep pattern: `line` matches one line; `block`, when the pattern allows it, is the multi-line form that
    finds whether any line of a block can match."""

    line: Regex
    block: Regex | None


@dataclass(frozen=True, kw_only=True)
class GrepLimits:
    max_matches: int
    max_line_chars: int
    exclude_dirs: tuple[str, ...]
    max_line_bytes: int = DEFAULT_LINE_CAP


def compile_pattern(pattern: str) -> Pattern:
    """`pattern` compiled by RE2. A pattern that is not a regular expression at all is refused with Python's
    diagnosis (the clearer one); a valid one that needs backtracking (backreferences, lookaround) is refused as
    unsupported, naming what RE2 could not take."""
    try:
        line: Regex = re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as error:
        reason = error.args[0].decode("utf-8", "replace") if error.args else str(error)
    else:
        return Pattern(line, _block_form(pattern))
    try:
        with warnings.catch_warnings():  # a FutureWarning about the syntax is no concern of dsh's output
            warnings.simplefilter("ignore")
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


def _block_form(pattern: str) -> Regex | None:
    if _WHOLE_TEXT.search(pattern):
        return None
    try:
        block: Regex = re2.compile("(?m)" + pattern, _RE2_OPTIONS)
    except re2.error:
        return None  # no faster form: every line is matched on its own
    return block


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
    """Run one grep. `check_cancelled` is called between files and between blocks of lines; it raises to stop the
    search (in a worker thread: `anyio.from_thread.check_cancelled`)."""
    regex = compile_pattern(pattern)
    matcher = GlobMatcher.compile(include, what="include") if include else None
    files = _files(workspace, raw_path, limits.exclude_dirs, check_cancelled)
    if matcher is not None:
        files = [f for f in files if matcher.matches(f.relative)]
    files.sort(key=lambda f: (-f.mtime, f.path))
    groups: list[tuple[str, list[tuple[int, str]]]] = []
    count = cut = 0
    truncated = False
    for found in files:
        check_cancelled()
        room = limits.max_matches - count
        # One more than room: whether there is more than room.
        searched = _search(workspace, found.real, regex, check_cancelled, room + 1, limits.max_line_bytes)
        hits, cut = searched.lines, cut + searched.cut
        if not hits:
            continue
        if len(hits) > room:
            hits, truncated = hits[:room], True
        if hits:
            groups.append((workspace.show(found.path), hits))
            count += len(hits)
        if truncated:
            break
    which = "1 line was" if cut == 1 else f"{cut} lines were"
    its = "its" if cut == 1 else "their"
    note = (
        f"({which} longer than {limits.max_line_bytes} bytes; only {its} first {limits.max_line_bytes} bytes were "
        "searched.)"
    )
    if not groups:
        return ToolResult(
            "No files found" + (f"\n\n{note}" if cut else ""), meta={"matches": 0, "truncated": False}
        )
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
    if cut:
        lines += ["", note]
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
    return list(walk_files(workspace, str(top), exclude_dirs, check_cancelled))


def _search(
    workspace: Workspace,
    real: str,
    pattern: Pattern,
    check_cancelled: Callable[[], None],
    limit: int,
    line_cap: int = DEFAULT_LINE_CAP,
) -> Hits:
    """The first `limit` (line number, line) pairs of the text file at the checked real path `real` that `pattern`
    finds a match in; nothing for a binary file, or one that cannot be opened (permissions, vanished, or changed
    into a symlink since it was listed)."""
    try:
        with workspace.open_file(real) as fd, open(fd, "rb", closefd=False) as file:
            return search_stream(file, pattern, check_cancelled, limit, line_cap)
    except (OSError, FsError):
        return Hits([], 0)  # unreadable: a search skips it as ripgrep does


@dataclass
class Hits:
    """What one file gave: its matching lines (number, text), and how many of its lines were longer than the line
    cap and so searched in their first bytes only."""

    lines: list[tuple[int, str]]
    cut: int


def search_stream(
    file: BinaryIO,
    pattern: Pattern,
    check_cancelled: Callable[[], None],
    limit: int,
    line_cap: int = DEFAULT_LINE_CAP,
) -> Hits:
    """As `_search`, over an open binary file, read in pieces: memory stays bounded by `line_cap` and the read
    size however long a line is.

    Bytes that are not UTF-8 are read as U+FFFD; a line's trailing `\\r` is not part of it."""
    head = file.read(SNIFF_BYTES)
    if not head or is_binary_prefix(head):
        return Hits([], 0)
    file.seek(0)
    pieces = _Pieces(file, line_cap)
    hits: list[tuple[int, str]] = []
    first = 0
    for data in pieces:
        check_cancelled()
        hits += _search_piece(data, pattern, check_cancelled, first, limit - len(hits))
        if len(hits) >= limit:
            break
        first += data.count(b"\n") + 1
    return Hits(hits, pieces.cut)


class _Pieces:
    """A file's text as runs of whole lines, read `_READ_BYTES` at a time: each run is lines joined by `\\n` (the
    newline after its last line, and each `\\r` before a newline, removed), valid UTF-8 (other bytes read as
    U+FFFD). A line still unfinished after `cap` bytes is kept to its first `cap` bytes; the rest is read past, and
    `cut` counts such lines."""

    def __init__(self, file: BinaryIO, cap: int) -> None:
        self.file, self.cap, self.cut = file, cap, 0

    def __iter__(self) -> Iterator[bytes]:
        pending = bytearray()
        skipping = False
        while chunk := self.file.read(_READ_BYTES):
            if skipping:
                at = chunk.find(b"\n")
                if at == -1:
                    continue
                chunk, skipping = chunk[at:], False
            pending += chunk
            end = pending.rfind(b"\n")
            if end != -1:
                yield _clean(bytes(pending[:end]))
                del pending[: end + 1]
            if len(pending) > self.cap:  # the unfinished last line is too long: keep its head only
                del pending[self.cap :]
                skipping, self.cut = True, self.cut + 1
        if pending:
            yield _clean(bytes(pending))  # _clean drops the last line's one trailing \r, as every line's


def _clean(data: bytes) -> bytes:
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
        data = data.removesuffix(b"\r")  # it stood before the newline that ended this run
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        data = data.decode("utf-8", errors="replace").encode("utf-8")
    return data


def _search_piece(
    data: bytes, pattern: Pattern, check_cancelled: Callable[[], None], first: int, limit: int
) -> list[tuple[int, str]]:
    """Up to `limit` matching lines of a run of whole lines whose first line is number `first` + 1."""
    hits: list[tuple[int, str]] = []
    start = 0
    while len(hits) < limit:
        check_cancelled()
        end = _block_end(data, start)
        if pattern.block is None:
            hits += _match_lines(pattern.line, data[start:end], first, limit - len(hits))
        elif pattern.block.search(data, start, end) is not None:
            hits += _match_block(pattern, data, start, end, first, limit - len(hits))
        if end >= len(data):
            break
        first += data.count(b"\n", start, end) + 1
        start = end + 1
    return hits


def _block_end(data: bytes, start: int) -> int:
    """Where the block from `start` ends: at the last newline within `_BLOCK_BYTES`, or the first one after when a
    line is longer, or at the end of `data`."""
    limit = start + _BLOCK_BYTES
    if limit >= len(data):
        return len(data)
    cut = data.rfind(b"\n", start, limit)
    if cut != -1:
        return cut
    cut = data.find(b"\n", limit)
    return cut if cut != -1 else len(data)


def _match_lines(line_regex: Regex, block: bytes, first: int, limit: int) -> list[tuple[int, str]]:
    """Up to `limit` matching lines of `block` (its first line is number `first` + 1), each matched on its own."""
    hits: list[tuple[int, str]] = []
    for number, line in enumerate(block.split(b"\n"), start=first + 1):
        if line_regex.search(line) is not None:
            hits.append((number, line.decode("utf-8")))
            if len(hits) == limit:
                break
    return hits


def _match_block(
    pattern: Pattern, data: bytes, start: int, end: int, first: int, limit: int
) -> list[tuple[int, str]]:
    """Up to `limit` matching lines of the block `data[start:end]`, found by searching it as one text, from each
    match's line on to the next. A match that runs past its line's end (the pattern matched across lines) hands the
    rest of the block to the line-by-line search; either way the cost stays linear in the block."""
    assert pattern.block is not None
    hits: list[tuple[int, str]] = []
    position, number = start, first + 1  # the start of line `number`
    while position <= end and len(hits) < limit:
        found = pattern.block.search(data, position, end)
        if found is None:
            break
        begin, finish = found.span()
        number += data.count(b"\n", position, begin)
        cut = data.rfind(b"\n", position, begin)
        line_start = cut + 1 if cut != -1 else position
        line_end = data.find(b"\n", begin, end)
        if line_end == -1:
            line_end = end
        if finish > line_end:
            return hits + _match_lines(pattern.line, data[line_start:end], number - 1, limit - len(hits))
        # A match within one line's bounds is a match of that line alone: at the line's edges `^`, `$` and `\b`
        # see a newline (multi-line mode) where the line search sees the text's edge, and they agree.
        hits.append((number, data[line_start:line_end].decode("utf-8")))
        position, number = line_end + 1, number + 1
    return hits
