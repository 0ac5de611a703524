"""The file tools' prompt sections: cross-call habits only. What each tool does, and when to use it, lives in its
description (the RFC's tool-guidance ownership rule)."""

from __future__ import annotations

__all__ = ["SECTIONS"]

SECTIONS: list[tuple[str, int, str]] = [
    (
        "tool:read",
        100,
        "To look at a file, use read, not shell commands like cat, head or tail. For a long file, read the part "
        "you need with offset and limit, and continue from the offset a truncated result names.",
    ),
    (
        "tool:write",
        101,
        "Before you overwrite an existing file with write, read it first. To change part of a file, prefer edit.",
    ),
    (
        "tool:edit",
        102,
        "Read a file before you edit it, and copy old_string from what read showed, without the line-number "
        "prefixes. When an edit fails, read the file again before retrying.",
    ),
    (
        "tool:glob",
        103,
        "To find files by name, use glob, not find or ls through the shell.",
    ),
    (
        "tool:grep",
        104,
        "To search file contents, use grep, not grep or rg through the shell; then read around the lines it "
        "reports before you change them.",
    ),
]
