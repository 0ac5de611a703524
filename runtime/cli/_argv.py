"""The password of a URL given on `dsh`'s command line (`--store postgresql://u:PW@host/db`), taken out of the
process's own argument memory, which is what `/proc/PID/cmdline` and `ps` show every user of the host: the first
thing `dsh` does. Python keeps its own copy of the arguments (`sys.argv`), so dsh still connects with the password;
the kernel's copy is overwritten in place with the redacted URL. Linux only (elsewhere nothing is done), and the
arguments are visible until dsh starts: a password is better given in `$PGPASSWORD` or a passfile."""

from __future__ import annotations

import sys

__all__ = ["hide_url_passwords"]

# /proc/PID/stat: after the parenthesised command name, field 3 onwards; arg_start and arg_end are fields 48 and 49
_ARG_START = 48 - 3


def _carries_password(arg: str) -> bool:
    return ("://" in arg and "@" in arg) or "password=" in arg.lower()


def hide_url_passwords(argv: list[str] | None = None) -> bool:
    """Overwrite every argument of this process that carries a URL password (`redact_url`) in the memory the kernel
    reads its command line from, each padded with NULs to its old length so the others stay where they are. Returns
    whether anything was overwritten; `argv` (default `sys.argv`) is only what decides whether to look."""
    if sys.platform != "linux" or not any(map(_carries_password, sys.argv if argv is None else argv)):
        return False
    import ctypes

    from dsh.runtime.session import redact_url

    try:
        with open("/proc/self/stat", "rb") as handle:
            stat = handle.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        start, end = int(fields[_ARG_START]), int(fields[_ARG_START + 1])
    except (
        OSError,
        ValueError,
        IndexError,
    ):  # no /proc, or a kernel that hides the fields: nothing to overwrite
        return False
    if not start or end <= start:
        return False
    raw = ctypes.string_at(start, end - start)
    hidden = []
    for arg in raw.split(b"\0"):
        shown = redact_url(arg.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        hidden.append(shown + b"\0" * (len(arg) - len(shown)) if len(shown) <= len(arg) else arg)
    new = b"\0".join(hidden)
    if new == raw:
        return False
    ctypes.memmove(start, new, len(new))
    return True
