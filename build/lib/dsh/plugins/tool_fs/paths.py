"""Workspace confinement: turning a model-supplied path into a real path inside the workspace root, or refusing it.

A path is judged by where the operating system would take it: `os.path.realpath` follows every symlink and applies
each `..` after the symlink before it, exactly as `open` would. Anything whose real path is not the root or below it
is refused, whether it got there by `..`, by being absolute, or through a symlink.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import INVALID_PATH, PATH_OUTSIDE_WORKSPACE, FsError

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
