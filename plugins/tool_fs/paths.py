"""Workspace confinement: turning a model-supplied path into a real path inside the workspace root, or refusing it.

A path is judged by where the operating system would take it: `os.path.realpath` follows every symlink and applies
each `..` after the symlink before it, exactly as `open` would. Anything whose real path is not the root or below it
is refused, whether it got there by `..`, by being absolute, or through a symlink.

The checked real path is then opened from a directory handle of the real root without following any symlink
(`handles`), so a symlink swapped in after the check is refused instead of followed out of the workspace.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from . import handles
from .errors import INVALID_PATH, NOT_A_DIRECTORY, NOT_A_FILE, PATH_OUTSIDE_WORKSPACE, FsError

__all__ = ["Workspace"]


@dataclass(frozen=True)
class Workspace:
    """The root the file tools are confined to: `root` as the session knows it (absolute, used in every path the
    model sees) and `real_root`, its real path (used for every check)."""

    root: Path
    real_root: Path

    @classmethod
    def at(cls, root: Path | str) -> Workspace:
        shown = Path(os.path.abspath(root))
        return cls(root=shown, real_root=Path(os.path.realpath(shown)))

    def contains(self, real: Path | str) -> bool:
        """Whether a real (symlink-free) path is the root or lies below it."""
        return Path(real).is_relative_to(self.real_root)

    def resolve(self, raw: str) -> Path:
        """The real path `raw` names (relative to the root, or absolute), if it lies inside the workspace.

        Raises FsError(PATH_OUTSIDE_WORKSPACE) otherwise, and FsError(INVALID_PATH) for a path with a NUL byte.
        """
        if "\x00" in raw:
            raise FsError(INVALID_PATH, f"path {raw!r} contains a NUL byte and cannot name a file")
        real = Path(os.path.realpath(os.path.join(self.root, raw)))
        if not self.contains(real):
            raise FsError(
                PATH_OUTSIDE_WORKSPACE,
                f'path "{raw}" resolves to {real}, outside the workspace {self.root}; only files inside the '
                "workspace can be used (relative paths are taken from the workspace root)",
            )
        return real

    def show(self, real: Path | str) -> str:
        """How a real path inside the workspace is shown to the model: the root as the session knows it, joined
        with the path's place below the real root."""
        relative = os.path.relpath(real, self.real_root)
        return str(self.root) if relative == "." else os.path.join(self.root, relative)

    def _below(self, real: Path | str) -> PurePosixPath:
        return PurePosixPath(os.path.relpath(real, self.real_root))

    def _raced(self, real: Path | str, error: handles.RaceError) -> FsError:
        changed = self.show(self.real_root / error.component) if error.component else str(self.root)
        return FsError(
            PATH_OUTSIDE_WORKSPACE,
            f"{self.show(real)} changed while it was being opened: {changed} is now a symbolic link, which could "
            f"lead outside the workspace {self.root}; the file tools follow symlinks only when a path is checked, "
            "never while they open it. Try again once the path has settled.",
        )

    @contextlib.contextmanager
    def open_file(self, real: Path | str) -> Iterator[int]:
        """A read-only fd of the regular file at the checked real path `real`, opened without following any
        symlink (a FIFO swapped in does not block the open). Raises FsError(NOT_A_FILE) for anything else."""
        with handles.at_root(str(self.real_root)) as root:
            try:
                fd = handles.open_beneath(root, self._below(real), os.O_RDONLY | os.O_NONBLOCK)
            except handles.RaceError as error:
                raise self._raced(real, error) from error
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise FsError(NOT_A_FILE, f"{self.show(real)} is not a regular file")
            os.set_blocking(fd, True)
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def open_directory(self, real: Path | str) -> Iterator[int]:
        """A directory fd of the checked real path `real`, opened without following any symlink."""
        with handles.at_root(str(self.real_root)) as root:
            try:
                fd = handles.open_beneath(root, self._below(real), os.O_RDONLY | os.O_DIRECTORY)
            except handles.RaceError as error:
                raise self._raced(real, error) from error
        try:
            yield fd
        finally:
            os.close(fd)

    def replace_file(self, real: Path | str, data: bytes) -> bool:
        """Make the checked real path `real` a regular file holding `data`, creating missing parent directories,
        all through handles that follow no symlink (a new file renamed over the old one, so a link swapped in for
        the file is replaced, never written through). Returns whether the file is new."""
        below = self._below(real)
        with handles.at_root(str(self.real_root)) as root:
            try:
                parent = handles.create_parents(root, below.parent)
            except handles.RaceError as error:
                raise self._raced(real, error) from error
            except (FileExistsError, NotADirectoryError) as error:
                raise FsError(
                    NOT_A_DIRECTORY,
                    f"cannot create {self.show(real)}: a component of its parent path is a file, not a directory",
                ) from error
        try:
            return handles.replace_in(parent, below.name, data)
        except IsADirectoryError as error:
            raise FsError(NOT_A_FILE, f"{self.show(real)} is a directory; write needs a file path") from error
        except handles.NotRegularError as error:
            raise FsError(NOT_A_FILE, f"{self.show(real)} is not a regular file") from error
        finally:
            os.close(parent)
