"""What a tool's child process can do to dsh, kept in bounds with the standard library alone. Children die with the
agent: `guarded(argv)` wraps a tool's command line in this file run as a script, a small supervisor the kernel
signals when dsh dies, even by SIGKILL (Linux `PR_SET_PDEATHSIG`), which then kills the command's whole process group
and every process descended from it. And children cannot read the agent: `undumpable()` marks dsh non-dumpable
(`PR_SET_DUMPABLE`), so a command running as the same user cannot open `/proc/<dsh>/environ` (the environment dsh
started with, provider keys included, whatever the child's own environment holds) or `/proc/<dsh>/mem`.

The supervisor leads the command's process group (the caller starts it with `start_new_session=True`), so killing
that group from dsh kills it and the command alike, as before. It is a subreaper (`PR_SET_CHILD_SUBREAPER`), so a
descendant that leaves the group (`setsid`) still counts as its descendant when the command's shell exits first.
It exits as the command exited: the same code, or death by the same signal. It runs with `python -I -S` and imports
only the standard library, so it starts in a few milliseconds. Off Linux the wrapper is not used (`guarded` returns
`argv` unchanged), and children are killed by dsh's own cancellation handling only.
"""

from __future__ import annotations

import os
import sys

# The supervisor starts before every command, so it imports next to nothing: os and sys (loaded with the
# interpreter anyway), ctypes only to call prctl, and the C module `_signal` rather than `signal`, which would pull
# in enum and functools. contextlib or pathlib would double its start-up time.
TYPE_CHECKING = False  # not typing's: importing typing alone costs more than the rest of the start-up
if TYPE_CHECKING:
    import signal
else:
    import _signal as signal

__all__ = ["SUPPORTED", "guarded", "restore_dumpable", "undumpable"]

SUPPORTED = sys.platform.startswith("linux")

_PR_SET_PDEATHSIG = 1
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_SEPARATOR = "--"


def guarded(argv: list[str]) -> list[str]:
    """`argv` run under the supervisor, bound to this process: when it dies, everything `argv` started dies."""
    if not SUPPORTED:
        return argv
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid()), _SEPARATOR, *argv]


def _prctl(option: int, value: int = 0) -> int:
    import ctypes  # imported when called: importing the module for `guarded` stays cheap

    libc = ctypes.CDLL(None, use_errno=True)
    answer: int = libc.prctl(option, value, 0, 0, 0)
    if answer < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl({option}) failed: {os.strerror(errno)}")
    return answer


def undumpable() -> int | None:
    """Mark this process non-dumpable (no core dumps, no same-user ptrace, its /proc files readable only with
    CAP_SYS_PTRACE); returns the previous setting, to restore with `restore_dumpable`. None off Linux."""
    if not SUPPORTED:
        return None
    previous = _prctl(_PR_GET_DUMPABLE)
    _prctl(_PR_SET_DUMPABLE, 0)
    return previous


def restore_dumpable(previous: int | None) -> None:
    """Undo `undumpable`."""
    if previous is not None:
        _prctl(_PR_SET_DUMPABLE, previous)


def _descendants(root: int) -> list[int]:
    """Every live process below `root`, by the parent links in /proc (the group alone misses `setsid` escapees)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                stat = file.read()
        except OSError:
            continue  # exited while we looked: nothing to kill
        # The command name (field 2) is in parentheses and may hold spaces; the parent pid follows the last ")".
        fields = stat[stat.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    pending = [root]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def _kill_everything(*_: object) -> None:
    """dsh is gone: kill every descendant, then the process group (this supervisor with it)."""
    for pid in _descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue  # already gone, or no longer ours
    os.killpg(0, signal.SIGKILL)


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        import resource

        resource.setrlimit(
            resource.RLIMIT_CORE, (0, 0)
        )  # the command dumped core, if it did; the supervisor won't
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        sys.exit(128 + number)  # a signal whose default is not to terminate: report it as a shell would
    sys.exit(os.waitstatus_to_exitcode(status))


def main(args: list[str]) -> None:
    parent_arg, separator, *command = args
    if separator != _SEPARATOR or not command:
        sys.exit("usage: guard.py PARENT_PID -- COMMAND [ARG...]")
    parent = int(parent_arg)

    def on_term(*_: object) -> None:
        # The death signal, or a SIGTERM sent to the whole group (`kill 0` in the command): only the first means
        # dsh is gone. For the second the command gets its own SIGTERM; the supervisor waits and exits as it does.
        if os.getppid() != parent:
            _kill_everything()

    signal.signal(signal.SIGTERM, on_term)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if os.getppid() != parent:
        _kill_everything()  # dsh died before the death signal was armed
    pid = os.fork()
    if pid == 0:
        # The command gets the dispositions a fresh process has; Python ignores SIGPIPE and SIGXFSZ.
        for number in (signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(number, signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as error:
            os.write(2, f"{command[0]}: {error.strerror}\n".encode())
            os._exit(127)
    while True:
        try:
            reaped, status = os.waitpid(-1, 0)  # adopted orphans are reaped too
        except ChildProcessError:
            sys.exit(1)  # the command vanished without a status: cannot happen while we hold it as our child
        if reaped == pid:
            _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
