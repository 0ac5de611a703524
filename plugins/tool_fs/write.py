"""The `write` tool's work: create a UTF-8 text file, or replace one entirely, creating missing parent
directories."""

from __future__ import annotations

from dsh.runtime.tools import ToolResult

from .errors import NOT_A_FILE, FsError
from .paths import Workspace

__all__ = ["write_path"]


def write_path(workspace: Workspace, raw: str, content: str) -> ToolResult:
    real = workspace.resolve(raw)
    shown = workspace.show(real)
    if real.is_dir():
        raise FsError(NOT_A_FILE, f"{shown} is a directory; write needs a file path")
    if real.exists() and not real.is_file():
        raise FsError(NOT_A_FILE, f"{shown} is not a regular file")
    data = content.encode("utf-8")
    # Parents created and the file replaced through handles that follow no symlink: a link swapped in since the
    # check is refused or replaced, never followed out of the workspace.
    created = workspace.replace_file(real, data)
    verb = "Created" if created else "Replaced"
    return ToolResult(
        f"{verb} {shown} ({len(data)} bytes)", meta={"path": shown, "bytes": len(data), "created": created}
    )
