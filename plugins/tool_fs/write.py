"""The `write` tool's work: create a UTF-8 text file, or replace one entirely, creating missing parent
directories."""

from __future__ import annotations

from dsh.runtime.tools import ToolResult

from .errors import NOT_A_DIRECTORY, NOT_A_FILE, FsError
from .paths import Workspace

__all__ = ["write_path"]


def write_path(workspace: Workspace, raw: str, content: str) -> ToolResult:
    real = workspace.resolve(raw)
    shown = workspace.show(real)
    if real.is_dir():
        raise FsError(NOT_A_FILE, f"{shown} is a directory; write needs a file path")
    if real.exists() and not real.is_file():
        raise FsError(NOT_A_FILE, f"{shown} is not a regular file")
    created = not real.exists()
    try:
        # `real` is symlink-free and inside the root, so every directory created here is inside it too.
        real.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as error:
        raise FsError(
            NOT_A_DIRECTORY,
            f"cannot create {shown}: a component of its parent path is a file, not a directory",
        ) from error
    data = content.encode("utf-8")
    real.write_bytes(data)
    verb = "Created" if created else "Replaced"
    return ToolResult(
        f"{verb} {shown} ({len(data)} bytes)", meta={"path": shown, "bytes": len(data), "created": created}
    )
