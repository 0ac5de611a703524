"""The `edit` tool's work: literal replacement in a UTF-8 text file, where the old text must occur exactly once
unless every occurrence is to be replaced."""

from __future__ import annotations

from dsh.runtime.tools import ToolResult

from .errors import (
    AMBIGUOUS_MATCH,
    BINARY_FILE,
    EMPTY_OLD_STRING,
    FILE_NOT_FOUND,
    NO_CHANGE,
    NO_MATCH,
    NOT_A_FILE,
    FsError,
)
from .paths import Workspace
from .read import SNIFF_BYTES, is_binary_prefix

__all__ = ["edit_path"]


def edit_path(workspace: Workspace, raw: str, old: str, new: str, replace_all: bool) -> ToolResult:
    if old == "":
        raise FsError(
            EMPTY_OLD_STRING,
            "old_string is empty; give the exact text to replace (use write to create a file)",
        )
    if old == new:
        raise FsError(NO_CHANGE, "old_string and new_string are identical; there is nothing to change")
    real = workspace.resolve(raw)
    shown = workspace.show(real)
    if not real.exists():
        raise FsError(
            FILE_NOT_FOUND, f"File not found: {shown}; edit changes existing files (use write to create one)"
        )
    if not real.is_file():
        raise FsError(NOT_A_FILE, f"{shown} is not a regular file")
    with workspace.open_file(real) as fd, open(fd, "rb", closefd=False) as file:
        data = file.read()
    if is_binary_prefix(data[:SNIFF_BYTES]):
        raise FsError(BINARY_FILE, f"{shown} is a binary file; edit only changes UTF-8 text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FsError(BINARY_FILE, f"{shown} is not UTF-8 text; edit only changes UTF-8 text") from error
    count = text.count(old)
    if count == 0:
        hint = ""
        if "\n" in old and "\r\n" in text and old.replace("\n", "\r\n") in text:
            hint = " (the file has CRLF line endings; old_string has LF)"
        raise FsError(
            NO_MATCH,
            f"old_string was not found in {shown}{hint}; read the file and copy the text exactly, including "
            "whitespace and indentation, without the line-number prefixes",
        )
    if count > 1 and not replace_all:
        raise FsError(
            AMBIGUOUS_MATCH,
            f"old_string occurs {count} times in {shown}; it must occur exactly once. Include more surrounding "
            f"lines to make it unique, or set replace_all to true to replace all {count}.",
        )
    workspace.replace_file(real, text.replace(old, new).encode("utf-8"))
    noun = "occurrence" if count == 1 else "occurrences"
    return ToolResult(
        f"Edited {shown}: replaced {count} {noun}.", meta={"path": shown, "replacements": count}
    )
