"""Finding instruction files: the project root (the first directory, from the working directory up, that holds a
marker), the candidates from the root down to the working directory, and bounded reads that refuse a file whose real
path leaves the project (a symlink out of the workspace is not read)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ._config import Config

__all__ = [
    "GLOBAL_DIR",
    "GLOBAL_FILE",
    "SEPARATOR",
    "Loaded",
    "ancestor_chain",
    "baseline_files",
    "dirs_below",
    "find_root",
    "probe",
    "read_bounded",
    "scope_key",
    "sha1",
    "split_scope",
]

GLOBAL_DIR = "user-global"
"""The scope directory of the one user-global file."""
GLOBAL_FILE = "AGENTS.md"
SEPARATOR = "\x00"
"""Joins a scope's directory and file name: no path or file name can hold it."""


@dataclass(frozen=True, slots=True)
class Loaded:
    """An instruction file read: where it is, how the model sees its path (relative to the project root), its text."""

    absolute: Path
    display: str
    content: str


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def scope_key(directory: str, name: str) -> str:
    return f"{directory}{SEPARATOR}{name}"


def split_scope(scope: str) -> tuple[str, str]:
    directory, _, name = scope.partition(SEPARATOR)
    return directory, name


def find_root(cwd: Path, markers: tuple[str, ...]) -> Path:
    """The first directory from `cwd` upwards holding one of `markers`; `cwd` when none does."""
    current = cwd
    while True:
        if any(os.path.exists(current / marker) for marker in markers):
            return current
        if current.parent == current:
            return cwd
        current = current.parent


def ancestor_chain(root: Path, cwd: Path) -> list[Path]:
    """`root`, then each directory down to `cwd` (just `root` when `cwd` is not below it)."""
    try:
        relative = cwd.relative_to(root)
    except ValueError:
        return [root]
    chain = [root]
    for part in relative.parts:
        chain.append(chain[-1] / part)
    return chain


def dirs_below(cwd: Path, touched: str) -> list[Path]:
    """The directories strictly below `cwd` down to the one holding `touched` (a path relative to `cwd`, or absolute);
    none when it is not below `cwd`."""
    target = Path(os.path.normpath(cwd / touched)).parent
    try:
        relative = target.relative_to(cwd)
    except ValueError:
        return []
    if not relative.parts or relative.parts[0] == "..":
        return []
    chain = [cwd]
    for part in relative.parts:
        chain.append(chain[-1] / part)
    return chain[1:]


def _inside(path: Path, root: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def probe(path: Path, root: Path | None) -> bool | None:
    """True: a regular file (a symlink is followed) that stays inside `root` (None: anywhere, the user-global file);
    False: absent, not a file, or a link out of the project; None: it exists but cannot be examined now."""
    try:
        if not path.is_file():
            return False
    except OSError:
        return None
    return root is None or _inside(path, root)


def read_bounded(path: Path, limit: int) -> str | None:
    """The file's UTF-8 text, or None when it holds more than `limit` bytes, is not UTF-8 or cannot be read (the
    original reads nothing of an oversized file)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def _display(root: Path, path: Path) -> str:
    return os.path.relpath(path, root)


def baseline_files(config: Config, cwd: Path, root: Path) -> list[Loaded]:
    """The baseline: the user-global file, then every candidate from the root down to `cwd` (base files, then local
    ones, in each directory), read within `max_source_bytes`; within a directory a file whose trimmed text repeats an
    earlier one's is dropped."""
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    if config.user_global:
        path = config.home() / GLOBAL_FILE
        if probe(path, None):
            found.append((path, f"{config.home_display()}/{GLOBAL_FILE}"))
            seen.add(path)
    for directory in ancestor_chain(root, cwd):
        for names in (config.instruction_files, config.local_instruction_files):
            for name in names:
                path = directory / name
                if path in seen or not probe(path, root):
                    continue
                seen.add(path)
                found.append((path, _display(root, path)))
    kept: list[Loaded] = []
    digests: dict[str, set[str]] = {}
    for path, display in found:
        content = read_bounded(path, config.max_source_bytes)
        if content is None:
            continue
        in_dir = digests.setdefault(os.path.dirname(display), set())
        digest = sha1(content.strip())
        if digest in in_dir:
            continue
        in_dir.add(digest)
        kept.append(Loaded(path, display, content))
    return kept
