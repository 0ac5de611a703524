"""The `read` tool's work: a numbered window of a UTF-8 text file, or a directory's entries, in the format the
original harness returned (recorded sessions replay against it).

```
<path>/abs/a.txt</path>
<type>file</type>
<content>
1: alpha

(End of file - total 1 lines)
</content>
```
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from dsh.runtime.tools import ToolResult

from .errors import (
    BINARY_FILE,
    FILE_NOT_FOUND,
    LIMIT_TOO_LARGE,
    NOT_A_FILE,
    OFFSET_OUT_OF_RANGE,
    FsError,
)
from .paths import Workspace

__all__ = ["SNIFF_BYTES", "ReadCaps", "bounded_lines", "is_binary_prefix", "read_path"]

SNIFF_BYTES = 8192
"""How much of a file is checked for a NUL byte, the mark of a binary file."""
_SKIP_BYTES = 1 << 16
"""The piece in which the unkept rest of an over-long line is read past."""


@dataclass(frozen=True)
class ReadCaps:
    max_lines: int
    max_line_chars: int
    max_bytes: int


def is_binary_prefix(prefix: bytes) -> bool:
    return b"\x00" in prefix


def read_path(workspace: Workspace, raw: str, offset: int, limit: int | None, caps: ReadCaps) -> ToolResult:
    """Read `raw` (a file or a directory) from line or entry `offset` (1-based), at most `limit` of them."""
    if limit is None:
        limit = caps.max_lines
    if limit > caps.max_lines:
        raise FsError(
            LIMIT_TOO_LARGE,
            f"limit {limit} is more than the {caps.max_lines} lines one read returns; read the file in windows "
            "with offset and limit",
        )
    real = workspace.resolve(raw)
    shown = workspace.show(real)
    if real.is_dir():
        with workspace.open_directory(real) as fd:
            return _read_directory(fd, shown, offset, limit)
    if not real.exists():
        raise FsError(FILE_NOT_FOUND, _not_found(workspace, real, shown))
    if not real.is_file():
        raise FsError(NOT_A_FILE, f"{shown} is not a regular file")
    with workspace.open_file(real) as fd, open(fd, "rb", closefd=False) as file:
        return _read_file(file, shown, offset, limit, caps)


def bounded_lines(file: BinaryIO, cap: int) -> Iterator[bytes]:
    """The lines of `file` (each with its newline, as iterating a file gives them), each cut to its first `cap`
    bytes: a line longer than that is read past in pieces and never held whole, so a 1 GiB line costs `cap`."""
    while True:
        line = file.readline(cap)
        if not line:
            return
        yield line
        if len(line) == cap and not line.endswith(b"\n"):
            while (rest := file.readline(_SKIP_BYTES)) and not rest.endswith(b"\n"):
                pass


def _read_file(file: BinaryIO, shown: str, offset: int, limit: int, caps: ReadCaps) -> ToolResult:
    numbered: list[str] = []
    lines: list[dict[str, Any]] = []
    used_bytes = 0
    capped_by_bytes = False
    total = 0
    # Enough bytes for the characters a line may show (4 bytes each at most) and the note that it was cut.
    line_cap = 4 * caps.max_line_chars + 4
    if is_binary_prefix(file.read(SNIFF_BYTES)):
        raise FsError(BINARY_FILE, f"{shown} is a binary file; read only shows UTF-8 text")
    file.seek(0)
    for total, raw_line in enumerate(
        bounded_lines(file, line_cap), start=1
    ):  # `total` is read after the loop
        if total < offset or len(lines) >= limit or capped_by_bytes:
            continue
        cut = len(raw_line) == line_cap and not raw_line.endswith(b"\n")
        text = _decode(raw_line, shown, total, cut=cut)
        if len(text) > caps.max_line_chars:
            text = text[: caps.max_line_chars] + f"... (line truncated to {caps.max_line_chars} chars)"
        entry = f"{total}: {text}"
        size = len(entry.encode()) + 1
        if lines and used_bytes + size > caps.max_bytes:
            capped_by_bytes = True
            continue
        used_bytes += size
        numbered.append(entry)
        lines.append({"number": total, "text": text})
    if offset > total and not (offset == 1 and total == 0):
        raise FsError(
            OFFSET_OUT_OF_RANGE, f"offset {offset} is past the end of {shown}, which has {total} lines"
        )
    last = offset + len(lines) - 1
    if capped_by_bytes:
        trailer = (
            f"(Output capped at {_size(caps.max_bytes)}. Showing lines {offset}-{last} of {total}. "
            f"Use offset={last + 1} to continue.)"
        )
    elif last < total:
        trailer = f"(Showing lines {offset}-{last} of {total}. Use offset={last + 1} to continue.)"
    else:
        trailer = f"(End of file - total {total} lines)"
    text = "\n".join(
        [f"<path>{shown}</path>", "<type>file</type>", "<content>", *numbered, "", trailer, "</content>"]
    )
    return ToolResult(text, meta={"path": shown, "offset": offset, "lines": lines, "totalLines": total})


def _decode(raw_line: bytes, shown: str, number: int, *, cut: bool = False) -> str:
    line = raw_line.removesuffix(b"\n").removesuffix(b"\r")
    if cut:  # the line was cut at a byte count, perhaps inside a character: drop that character's head
        for drop in range(4):
            try:
                return line[: len(line) - drop].decode("utf-8")
            except UnicodeDecodeError:
                continue
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FsError(
            BINARY_FILE,
            f"{shown} is not UTF-8 text (invalid byte at line {number}, column {error.start + 1}); read only "
            "shows UTF-8 text",
        ) from error


def _size(limit: int) -> str:
    return f"{limit // 1024} KB" if limit % 1024 == 0 else f"{limit} bytes"


def _read_directory(fd: int, shown: str, offset: int, limit: int) -> ToolResult:
    with os.scandir(fd) as scan:
        entries = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in scan)
    total = len(entries)
    if offset > total and not (offset == 1 and total == 0):
        raise FsError(
            OFFSET_OUT_OF_RANGE, f"offset {offset} is past the end of {shown}, which has {total} entries"
        )
    window = entries[offset - 1 : offset - 1 + limit]
    last = offset + len(window) - 1
    if last < total:
        trailer = f"(Showing entries {offset}-{last} of {total}. Use offset={last + 1} to continue.)"
    else:
        trailer = f"({total} entries)"
    text = "\n".join(
        [f"<path>{shown}</path>", "<type>directory</type>", "<entries>", *window, "", trailer, "</entries>"]
    )
    return ToolResult(text, meta={"path": shown, "offset": offset, "entries": window, "totalEntries": total})


def _not_found(workspace: Workspace, real: Path, shown: str) -> str:
    """Say the file is missing, and name up to three similar files in its directory."""
    message = f"File not found: {shown}"
    parent, name = real.parent, real.name.lower()
    if not name or not parent.is_dir() or not workspace.contains(parent):
        return message
    try:
        with workspace.open_directory(parent) as fd, os.scandir(fd) as scan:
            similar = sorted(
                entry.name for entry in scan if name in entry.name.lower() or _stem(entry.name) == _stem(name)
            )[:3]
    except (OSError, FsError):  # the directory changed since it was checked: no suggestions
        return message
    if not similar:
        return message
    return (
        message + "\n\nDid you mean one of these?\n" + "\n".join(workspace.show(parent / s) for s in similar)
    )


def _stem(name: str) -> str:
    return name.lower().split(".", 1)[0]
