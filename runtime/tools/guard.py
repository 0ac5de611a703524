"""What a tool's child process can do to dsh, kept in bounds with the standard library alone. Children die with the
agent: `guarded(argv)` wraps a tool's command line in this file run as a script, a small supervisor the kernel
signals when dsh dies, even by SIGKILL (Linux `PR_SET_PDEATHSIG`), which then kills the command's whole process group
and every process descended from it. And children cannot read the agent: `undumpable()` marks dsh non-dumpable
(`PR_SET_DUMPABLE`), so a command running as the same user cannot open `/proc/<dsh>/environ` (the environment dsh
started with, provider keys included, whatever the child's own environment holds) or `/proc/<dsh>/mem`.

The supervisor leads the command's process group (the caller starts it with `start_new_session=True`), so killing
that group from dsh kills it and the command alike, as before. It is a subreaper (`PR_SET_CHILD_SUBREAPER`), so a
descendant that leaves the group (`setsid`) still counts as its descendant when the command's shell exits first.
When the command exits, whatever it left running (`setsid nohup sleep 300 &` included) gets `GRACE_SECONDS` to
finish, then is killed: nothing outlives the command. It exits as the command exited: the same code, or death by
the same signal.

Limits (`Limits`, all optional): `memory` (bytes), `file_size` (bytes) and `cpu` (seconds) are set as rlimits on the
command (`RLIMIT_DATA`, `RLIMIT_FSIZE`, `RLIMIT_CPU`); `processes` and `memory` are also watched over the whole tree
every `WATCH_SECONDS` (`/proc`'s parent links and resident sizes), and a tree past either is killed and the limit
written to the report fd. The watch, not `RLIMIT_NPROC`, bounds processes: that rlimit counts every process of the
user, not of the command, and root is exempt from it. It runs with `python -I -S` and imports
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

__all__ = [
    "GRACE_SECONDS",
    "SUPPORTED",
    "WATCH_SECONDS",
    "Limits",
    "guarded",
    "restore_dumpable",
    "undumpable",
]

SUPPORTED = sys.platform.startswith("linux")

_PR_SET_PDEATHSIG = 1
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_SEPARATOR = "--"
_ENTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_supervise.py")
"""What `guarded` runs: a few lines that import this file (from its cached bytecode) and call `main`."""
GRACE_SECONDS = 0.25
"""How long what a command left running may go on after it exits (to finish writing its output) before it is
killed."""
WATCH_SECONDS = 0.1
"""How often the process and memory limits are checked over the command's whole tree."""
_LIMIT_NAMES = ("processes", "memory", "file_size", "cpu")


class Limits:
    """What one command may use; None leaves a resource unbounded. `processes`: live processes in its tree;
    `memory`: bytes, per process (`RLIMIT_DATA`: an allocation past it fails) and resident over the whole tree (the
    tree is killed); `file_size`: bytes one written file may reach (`RLIMIT_FSIZE`: the writer gets SIGXFSZ);
    `cpu`: CPU seconds per process (`RLIMIT_CPU`: SIGXCPU)."""

    __slots__ = _LIMIT_NAMES

    def __init__(
        self,
        *,
        processes: int | None = None,
        memory: int | None = None,
        file_size: int | None = None,
        cpu: int | None = None,
    ) -> None:
        self.processes, self.memory, self.file_size, self.cpu = processes, memory, file_size, cpu

    def arguments(self) -> list[str]:
        return [f"--{name}={getattr(self, name)}" for name in _LIMIT_NAMES if getattr(self, name) is not None]


def guarded(argv: list[str], limits: Limits | None = None, report_fd: int | None = None) -> list[str]:
    """`argv` run under the supervisor, bound to this process: when it dies, everything `argv` started dies. With
    `limits`, the command runs within them. With `report_fd` (passed to the child with `pass_fds`) the command runs
    in a process group of its own, and the fd receives lines: `group N` (that group, for the caller to kill with
    the supervisor's: `os.killpg` of both), then the name of a limit the supervisor enforced by killing the tree
    (`processes` or `memory`), if it did."""
    if not SUPPORTED:
        return argv
    options = limits.arguments() if limits is not None else []
    if report_fd is not None:
        options.append(f"--report={report_fd}")
    return [
        sys.executable,
        "-I",
        "-S",
        os.path.abspath(__file__),
        str(os.getpid()),
        *options,
        _SEPARATOR,
        *argv,
    ]


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


def _tree(root: int) -> tuple[list[int], int]:
    """Every live (not yet reaped) process below `root`, by the parent links in /proc (the group alone misses
    `setsid` escapees), and the resident pages of those not yet zombies."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue  # exited while we looked: nothing to kill
        # The command name (field 2) is in parentheses and may hold spaces; the state, then the parent pid, follow
        # the last ")"; the resident size in pages is field 24.
        fields = stat[stat.rfind(b")") + 2 :].split()
        pages = 0 if fields[0] == b"Z" else int(fields[21])
        children.setdefault(int(fields[1]), []).append((int(entry), pages))
    found: list[int] = []
    resident = 0
    pending = [root]
    while pending:
        for child, pages in children.get(pending.pop(), []):
            found.append(child)
            resident += pages
            pending.append(child)
    return found, resident


def _descendants(root: int) -> list[int]:
    return _tree(root)[0]


_command_group: int | None = None
"""The command's own process group, when it has one (`--report`): a group is killed at once, forks included."""


def _kill_command_group() -> None:
    if _command_group is not None:
        try:  # noqa: SIM105 (contextlib would double the supervisor's start-up)
            os.killpg(_command_group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # the group is gone already


def _kill_everything(*_: object) -> None:
    """dsh is gone: kill the command's group and every descendant, then the process group (this supervisor with
    it)."""
    _kill_command_group()
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


_PAGE = os.sysconf("SC_PAGE_SIZE") if SUPPORTED else 4096


class _Watch:
    """The supervisor's state: the command's pid, its status once reaped (by the main loop or by a reap during a
    kill), and the limit that killed the tree, if one did."""

    def __init__(self, command: int, limits: dict[str, int], report_fd: int | None) -> None:
        self.command, self.limits, self.report_fd = command, limits, report_fd
        self.status: int | None = None
        self.exceeded: str | None = None

    def reap(self, flags: int) -> bool:
        """Reap one child (adopted orphans included); False when there is none to reap now."""
        try:
            reaped, status = os.waitpid(-1, flags)
        except ChildProcessError:
            return False
        if reaped == 0:
            return False
        if reaped == self.command:
            self.status = status
        return True

    def kill_tree(self) -> None:
        """Kill every descendant until none is left, reaping as they die. The command's group goes first, in one
        signal the kernel delivers to all its members at once, so a fork bomb cannot outrun it; descendants that
        left the group (`setsid`) are then killed one by one, found again until none is left."""
        _kill_command_group()
        while True:
            found = _descendants(os.getpid())
            if not found:
                return
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    continue
            while self.reap(os.WNOHANG):
                pass

    def arm(self) -> None:
        """Check again in `WATCH_SECONDS`: a one-shot timer, re-armed after each check, so a check slower than the
        period (a /proc of thousands of processes) is never interrupted by the next (Python would nest them)."""
        signal.setitimer(signal.ITIMER_REAL, WATCH_SECONDS)

    def check(self, *_: object) -> None:
        if self.exceeded is not None or self.status is not None:
            return
        found, pages = _tree(os.getpid())
        processes, memory = self.limits.get("processes"), self.limits.get("memory")
        if processes is not None and len(found) > processes:
            self.exceeded = "processes"
        elif memory is not None and pages * _PAGE > memory:
            self.exceeded = "memory"
        else:
            self.arm()
            return
        self.kill_tree()
        if self.report_fd is not None:
            try:  # noqa: SIM105 (contextlib would double the supervisor's start-up)
                os.write(self.report_fd, f"{self.exceeded}\n".encode())
            except OSError:
                pass  # the reader is gone: dsh will not ask

    def finish(self) -> None:
        """The command has exited: give what it left running the grace period, then kill it."""
        deadline = None
        while True:
            while self.reap(os.WNOHANG):
                pass
            if _no_children():
                return
            if deadline is None:
                deadline = _now() + GRACE_SECONDS
            elif _now() >= deadline:
                break
            _sleep(0.01)
        self.kill_tree()


def _no_children() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _now() -> float:
    import time  # imported when called: a command leaving nothing running never needs it

    return time.monotonic()


def _sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)


def _set_rlimits(limits: dict[str, int]) -> None:
    import resource

    for name, which in (("memory", resource.RLIMIT_DATA), ("file_size", resource.RLIMIT_FSIZE)):
        if name in limits:
            resource.setrlimit(which, (limits[name], limits[name]))
    if "cpu" in limits:  # SIGXCPU at the soft limit, SIGKILL a second later if it is ignored
        resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu"], limits["cpu"] + 1))


def _parse(args: list[str]) -> tuple[int, dict[str, int], int | None, list[str]]:
    usage = (
        "usage: guard.py PARENT_PID [--processes=N --memory=B --file_size=B --cpu=S --report=FD] -- COMMAND"
    )
    if not args or _SEPARATOR not in args:
        sys.exit(usage)
    split = args.index(_SEPARATOR)
    parent, options, command = args[0], args[1:split], args[split + 1 :]
    limits: dict[str, int] = {}
    report_fd = None
    for option in options:
        name, _, value = option.removeprefix("--").partition("=")
        if name == "report":
            report_fd = int(value)
        elif name in _LIMIT_NAMES:
            limits[name] = int(value)
        else:
            sys.exit(usage)
    if not command:
        sys.exit(usage)
    return int(parent), limits, report_fd, command


def main(args: list[str]) -> None:
    parent, limits, report_fd, command = _parse(args)
    if report_fd is not None:
        os.set_inheritable(report_fd, False)  # the command never sees it

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
            if report_fd is not None:
                # Its own group, which the supervisor (and dsh, told its number) kill at once; and it dies if the
                # supervisor is killed before it could kill the group.
                os.setpgid(0, 0)
                _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            _set_rlimits(limits)
            os.execvp(command[0], command)
        except OSError as error:
            os.write(2, f"{command[0]}: {error.strerror}\n".encode())
            os._exit(127)
    global _command_group
    if report_fd is not None:
        try:  # noqa: SIM105
            os.setpgid(pid, pid)  # also here: whichever runs first, the group exists before either goes on
        except OSError:
            pass  # the child has exec'd: it made the group itself
        _command_group = pid
        os.write(report_fd, f"group {pid}\n".encode())
    watch = _Watch(pid, limits, report_fd)
    if "processes" in limits or "memory" in limits:
        signal.signal(signal.SIGALRM, watch.check)
        watch.arm()
    while watch.status is None:
        if not watch.reap(0) and watch.status is None:  # adopted orphans are reaped too
            sys.exit(1)  # the command vanished without a status: cannot happen while we hold it as our child
    signal.setitimer(signal.ITIMER_REAL, 0)
    watch.finish()
    _exit_like(watch.status)


if __name__ == "__main__":
    main(sys.argv[1:])
