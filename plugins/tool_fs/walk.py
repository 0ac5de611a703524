"""The files below a directory of the workspace, as glob and grep see them: regular files only, hidden and ignored
ones included, the configured directory names skipped, and no symlink followed out of the workspace."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .paths import Workspace

__all__ = ["FoundFile", "walk_files"]


@dataclass(frozen=True)
class FoundFile:
    """A file found below the searched directory: where it was found (`path`, `relative` to the searched directory
    with `/` separators), the real file it names, and that file's modification time."""

    path: str
    relative: str
    real: str
    mtime: float


def _never_cancelled() -> None:
    return None


def walk_files(
    workspace: Workspace,
    top: str,
    exclude_dirs: tuple[str, ...],
    check_cancelled: Callable[[], None] = _never_cancelled,
) -> Iterator[FoundFile]:
    """Every regular file below the real directory `top`, in no particular order.

    Symlinked directories are not descended (no loops, no file listed twice); a symlinked file is included only
    if its target is a regular file inside the workspace. The walk goes by directory handles (`os.fwalk`) from a
    handle of `top` opened without following symlinks, so a directory swapped for a symlink mid-walk is not entered.
    `check_cancelled` is called for each directory and file; it raises to stop the walk.
    """
    excluded = set(exclude_dirs)
    with workspace.open_directory(top) as top_fd:
        for directory, dirnames, filenames, dir_fd in os.fwalk(".", dir_fd=top_fd):
            check_cancelled()
            dirnames[:] = [name for name in dirnames if name not in excluded]
            prefix = "" if directory == "." else directory[2:] + "/"
            for name in filenames:
                check_cancelled()
                relative = prefix + name
                path = os.path.join(top, relative)
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    real = path
                    if stat.S_ISLNK(info.st_mode):
                        real = os.path.realpath(path)
                        if not workspace.contains(real):
                            continue
                        info = os.stat(real)
                except OSError:
                    continue  # vanished since it was listed, or a broken symlink: not a file to report
                if not stat.S_ISREG(info.st_mode):
                    continue
                yield FoundFile(path=path, relative=relative, real=real, mtime=info.st_mtime)
