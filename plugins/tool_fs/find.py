"""The `glob` tool's work: files whose name or relative path matches a glob, newest first, capped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dsh.runtime.tools import ToolResult

from .errors import FILE_NOT_FOUND, NOT_A_DIRECTORY, FsError
from .globs import GlobMatcher
from .paths import Workspace
from .walk import walk_files

__all__ = ["glob_files", "search_directory"]


def search_directory(workspace: Workspace, raw: str | None) -> Path:
    """The real directory a search starts from: `raw` inside the workspace, or the workspace root."""
    real = workspace.resolve(raw if raw else ".")
    if not real.exists():
        raise FsError(FILE_NOT_FOUND, f"Directory not found: {workspace.show(real)}")
    if not real.is_dir():
        raise FsError(NOT_A_DIRECTORY, f"{workspace.show(real)} is not a directory; give a directory as path")
    return real


def _never_cancelled() -> None:
    return None


def glob_files(
    workspace: Workspace,
    pattern: str,
    raw_path: str | None,
    max_results: int,
    exclude_dirs: tuple[str, ...],
    *,
    check_cancelled: Callable[[], None] = _never_cancelled,
) -> ToolResult:
    """Run one glob. `check_cancelled` is called for each directory and file walked; it raises to stop the search
    (in a worker thread: `anyio.from_thread.check_cancelled`)."""
    matcher = GlobMatcher.compile(pattern)
    top = search_directory(workspace, raw_path)
    walked = walk_files(workspace, str(top), exclude_dirs, check_cancelled)
    found = [f for f in walked if matcher.matches(f.relative)]
    found.sort(key=lambda f: (-f.mtime, f.path))
    shown = [workspace.show(f.path) for f in found[:max_results]]
    truncated = len(found) > max_results
    if not shown:
        text = "No files found"
    else:
        text = "\n".join(shown)
        if truncated:
            text += (
                f"\n\n(Results are truncated: showing the {max_results} newest of {len(found)} files. "
                "Use a more specific path or pattern.)"
            )
    return ToolResult(text, meta={"count": len(found), "truncated": truncated})
