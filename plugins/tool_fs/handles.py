"""Opening a checked path without a race: every open starts from a directory handle of the workspace's real root
and follows no symlink at any component, so a symlink swapped in between the check (`Workspace.resolve`) and the
open cannot lead the file tools outside the workspace.

The path opened is the real path the check produced, taken relative to the real root: it holds no symlink and no
`..` when it is checked, so a symlink found at open time can only be one put there since, and the open refuses it.
Linux 5.6+ does it in one call, `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (which implies no magic
links either); elsewhere, or where a seccomp filter refuses `openat2`, each component is opened in turn from the
previous one's handle with `O_NOFOLLOW`. Writes never open the file they replace: they write a new file in the
parent's handle and rename it over the old one there, so even a hard link to a file outside cannot carry a write out.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from pathlib import PurePosixPath

__all__ = [
    "OPENAT2",
    "NotRegularError",
    "RaceError",
    "at_root",
    "create_parents",
    "open_beneath",
    "replace_in",
]

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (the syscall table was unified for it)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | _CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


class NotRegularError(OSError):
    """A write found a device, FIFO or socket where the file should be."""


class RaceError(Exception):
    """A component of a checked path is a symlink (or no longer a directory) at open time: it changed since the
    check. `component` is the path up to the component that changed."""

    def __init__(self, component: str) -> None:
        super().__init__(component)
        self.component = component


@functools.cache
def _syscall() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if not sys.platform.startswith("linux"):
        return None
    function = ctypes.CDLL(None, use_errno=True).syscall
    function.restype = ctypes.c_long
    return function


def _openat2(dir_fd: int, relative: str, flags: int) -> int:
    function = _syscall()
    assert function is not None
    how = _OpenHow(flags | _CLOEXEC, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    encoded = os.fsencode(relative)
    for _ in range(8):  # EAGAIN: a concurrent rename was seen; the kernel asks for a retry
        fd = function(
            ctypes.c_long(_SYS_OPENAT2),
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(encoded),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd >= 0:
            return int(fd)
        code = ctypes.get_errno()
        if code != errno.EAGAIN:
            raise OSError(code, os.strerror(code), relative)
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN), relative)


@functools.cache
def _has_openat2() -> bool:
    """Whether this kernel runs `openat2` (5.6+) and no seccomp filter refuses it."""
    if _syscall() is None:
        return False
    root = os.open("/", _DIRECTORY_FLAGS)
    try:
        os.close(_openat2(root, ".", os.O_RDONLY | os.O_DIRECTORY))
    except OSError:
        return False
    finally:
        os.close(root)
    return True


OPENAT2 = _has_openat2
"""Whether opens go through `openat2` here (a function: asked on first use, then remembered)."""

_use_openat2 = True
"""Tests turn this off to exercise the component walk on a kernel that has `openat2`."""


def _parts(relative: PurePosixPath) -> list[str]:
    return [part for part in relative.parts if part not in ("", ".")]


def _open_directory_in(dir_fd: int, name: str, walked: list[str]) -> int:
    try:
        return os.open(name, _DIRECTORY_FLAGS, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in (errno.ENOTDIR, errno.ELOOP):
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                    raise RaceError("/".join(walked)) from error
        raise OSError(error.errno, error.strerror, "/".join(walked)) from error


def _walk(root_fd: int, parts: list[str], flags: int) -> int:
    """Open `parts` below `root_fd` one component at a time, following no symlink."""
    fd = os.dup(root_fd)
    walked: list[str] = []
    try:
        for name in parts[:-1]:
            walked.append(name)
            child = _open_directory_in(fd, name, walked)
            os.close(fd)
            fd = child
        if not parts:
            return os.dup(fd)
        walked.append(parts[-1])
        try:
            return os.open(parts[-1], flags | getattr(os, "O_NOFOLLOW", 0) | _CLOEXEC, dir_fd=fd)
        except OSError as error:
            if error.errno == errno.ELOOP or (
                error.errno == errno.ENOTDIR and flags & getattr(os, "O_DIRECTORY", 0)
            ):
                with contextlib.suppress(OSError):
                    if stat.S_ISLNK(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
                        raise RaceError("/".join(walked)) from error
            raise OSError(error.errno, error.strerror, "/".join(walked)) from error
    finally:
        os.close(fd)


def open_beneath(root_fd: int, relative: PurePosixPath, flags: int) -> int:
    """An fd for `relative` (a symlink-free path with no `..`) opened below `root_fd` with `flags`, following no
    symlink. Raises RaceError where a symlink stands in the way, OSError for anything else."""
    parts = _parts(relative)
    if _use_openat2 and _has_openat2():
        try:
            return _openat2(root_fd, "/".join(parts) or ".", flags)
        except OSError as error:
            if error.errno not in (errno.ELOOP, errno.EXDEV):
                raise OSError(error.errno, error.strerror, str(relative)) from error
        # Refused for a symlink: find which component, with the walk, for the message (it raises RaceError).
    return _walk(root_fd, parts, flags)


def create_parents(root_fd: int, relative: PurePosixPath) -> int:
    """An fd for the directory `relative` below `root_fd`, creating each missing component, following no symlink.
    Raises RaceError where a symlink stands in the way; NotADirectoryError where a component is not a directory."""
    fd = os.dup(root_fd)
    walked: list[str] = []
    try:
        for name in _parts(relative):
            walked.append(name)
            try:
                child = _open_directory_in(fd, name, walked)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):  # created meanwhile: opened below all the same
                    os.mkdir(name, dir_fd=fd)
                child = _open_directory_in(fd, name, walked)
            os.close(fd)
            fd = child
        return os.dup(fd)
    finally:
        os.close(fd)


def replace_in(dir_fd: int, name: str, data: bytes) -> bool:
    """Make `name` in the directory `dir_fd` a regular file holding `data`: written to a new file beside it, then
    renamed over it, so nothing the old name pointed to (a symlink or hard link swapped in) is ever opened. The old
    file's mode and owner are kept. Returns whether the file is new. Raises IsADirectoryError for a directory and
    NotRegularError for another non-regular file."""
    try:
        old: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None and stat.S_ISDIR(old.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    if old is not None and not (stat.S_ISREG(old.st_mode) or stat.S_ISLNK(old.st_mode)):
        raise NotRegularError(errno.EINVAL, "not a regular file", name)
    temporary = f".{name[:200]}.{secrets.token_hex(6)}.dsh-write"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | _CLOEXEC
    fd = os.open(temporary, flags, 0o666, dir_fd=dir_fd)
    try:
        try:
            if old is not None and stat.S_ISREG(old.st_mode):
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
                with contextlib.suppress(OSError):  # only root may give a file away; others keep their own
                    if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                        os.fchown(fd, old.st_uid, old.st_gid)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise
    return old is None


@contextlib.contextmanager
def at_root(real_root: str) -> Iterator[int]:
    """A directory fd of the workspace's real root for the length of one call."""
    fd = os.open(real_root, _DIRECTORY_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)
