"""The plugin's config: the workspace root override, the output caps and which tools to register."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = ["ALL_TOOLS", "Config", "ToolName"]

ToolName = Literal["read", "write", "edit", "glob", "grep"]
ALL_TOOLS: tuple[ToolName, ...] = ("read", "write", "edit", "glob", "grep")

Positive = Annotated[int, msgspec.Meta(ge=1)]


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`root`: the workspace the tools are confined to; unset means the calling session's cwd, and a relative
    value is taken from that cwd. `tools`: which tools to register (a read-only deployment lists
    `[read, glob, grep]`). The rest are caps on what one call returns."""

    root: str | None = None
    tools: tuple[ToolName, ...] = ALL_TOOLS
    read_max_lines: Positive = 2000
    """The default and the maximum `limit` of a read."""
    read_max_line_chars: Positive = 2000
    """Longer lines are cut to this many characters, with a note."""
    read_max_bytes: Positive = 50 * 1024
    """A read's listing stops before it passes this many UTF-8 bytes, with a note saying where to continue."""
    glob_max_results: Positive = 100
    grep_max_matches: Positive = 100
    grep_max_line_chars: Positive = 2000
    grep_max_line_bytes: Positive = 1 << 20
    """grep keeps at most this many bytes of one line: a longer line is searched in its first bytes only (the result
    says how many lines were), so a 1 GiB line costs a bounded amount of memory."""
    exclude_dirs: tuple[str, ...] = (".git",)
    """Directory names glob and grep never descend into (hidden and ignored files are otherwise included)."""
