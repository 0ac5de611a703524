"""The file policies a bash command runs under, as the original names them: `danger-full-access` (no sandbox),
`workspace-write` and `read-only` (each command under bubblewrap: the filesystem read-only but for the workspace in
`workspace-write`, a private `/tmp`, no network unless allowed), the check that bubblewrap works here, and how each
policy is stated to the model."""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dsh.runtime.kernel.errors import PluginLoadError

__all__ = ["POLICIES", "Policy", "Sandbox", "SandboxUnavailableError", "kernel_knobs", "policy_text"]

Policy = Literal["danger-full-access", "workspace-write", "read-only"]
POLICIES: tuple[Policy, ...] = ("danger-full-access", "workspace-write", "read-only")

_PROBE_SECONDS = 10
_RUN_KEPT = ("/run/systemd/resolve", "/run/resolvconf")
"""What a sandboxed command keeps of /run: the resolver configuration /etc/resolv.conf may link to."""
_PROC_PRIVATE = frozenset({"self", "thread-self"})
"""/proc entries that describe the calling process (links into its own pid directory), left as the fresh procfs has
them."""


@functools.cache
def kernel_knobs(proc: str = "/proc") -> tuple[str, ...]:
    """The /proc entries a sandboxed command sees read-only: every directory and every file with a write bit that is
    not a process's own (`/proc/sys`, `/proc/sysrq-trigger`, `/proc/irq`, `/proc/mtrr`, ...), read once from this
    host's /proc.

    Why: when dsh runs as root, the sandbox's user namespace maps its root to the host's uid 0, which owns these files,
    so a fresh procfs leaves `kernel.core_pattern` and every other sysctl writable for the whole host. Dropping
    capabilities does not help: ownership, not a capability, grants the write. Listing them from /proc, rather than
    naming the known ones, also covers entries a future kernel adds."""
    knobs = []
    for entry in sorted(os.scandir(proc), key=lambda e: e.name):
        if entry.name.isdigit() or entry.name in _PROC_PRIVATE:
            continue
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:  # an entry that vanished between listing and stat has nothing left to protect
            continue
        if stat.S_ISDIR(mode) or (stat.S_ISREG(mode) and mode & 0o222):
            knobs.append(entry.path)
    return tuple(knobs)


class SandboxUnavailableError(PluginLoadError):
    """A deployment asks for a sandboxed policy, and bubblewrap is missing or cannot create its namespaces here; dsh
    refuses to load rather than run commands unconfined."""

    def __init__(self, message: str, *, plugin: str, policy: Policy) -> None:
        super().__init__(message, plugin=plugin)
        self.policy = policy


@dataclass(frozen=True)
class Sandbox:
    """How each command is confined: `policy` (not `danger-full-access`), whether it may use the network, and the
    `bwrap` binary that confines it."""

    policy: Policy
    network: bool
    bwrap: str

    @classmethod
    def check(cls, policy: Policy, *, network: bool, plugin: str) -> Sandbox:
        """A working sandbox for `policy`, or `SandboxUnavailableError` saying why there is none: bubblewrap is run
        once here with the namespaces every command will use."""
        found = shutil.which("bwrap")
        if found is None:
            raise SandboxUnavailableError(
                f'plugin "{plugin}": sandbox "{policy}" runs each bash command under bubblewrap, and `bwrap` is not '
                "on PATH; install it (Debian/Ubuntu: apt-get install bubblewrap) or set `sandbox: "
                "danger-full-access` to run commands unconfined",
                plugin=plugin,
                policy=policy,
            )
        sandbox = cls(policy, network, found)
        probe = Path("/")
        try:
            done = subprocess.run(
                [*sandbox.argv(["true"], workspace=probe, workdir=probe)],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            reason = str(error)
        else:
            if done.returncode == 0:
                return sandbox
            reason = done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
        raise SandboxUnavailableError(
            f'plugin "{plugin}": sandbox "{policy}" needs bubblewrap to create user, mount, pid and network '
            f"namespaces, and it cannot here ({found}: {reason}); allow unprivileged user namespaces (sysctl "
            "kernel.unprivileged_userns_clone=1 or a container run with them), or set `sandbox: "
            "danger-full-access` to run commands unconfined",
            plugin=plugin,
            policy=policy,
        )

    def argv(self, command: list[str], *, workspace: Path, workdir: Path) -> list[str]:
        """`command` under bubblewrap: the root read-only, fresh `/dev`, `/proc`, `/tmp` and `/run`, the workspace writable
        (`workspace-write`) or visible read-only (`read-only`, needed when it lies below `/tmp`), run in `workdir`;
        its own pid namespace, killed with its parent."""
        real = str(workspace.resolve())
        # A user namespace and no capabilities even when dsh runs as root: root's CAP_SYS_ADMIN would remount the
        # read-only root read-write.
        args = [self.bwrap, "--die-with-parent", "--unshare-user", "--cap-drop", "ALL"]
        args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        if not self.network:
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        # The fresh procfs leaves the kernel's settings writable to a root dsh (see `kernel_knobs`): bind each over
        # itself read-only. /sys needs nothing more: it stays part of the read-only root.
        for knob in kernel_knobs():
            args += ["--ro-bind", knob, knob]
        # A read-only mount does not stop connect() on a unix socket: /run holds the daemons' (docker, dbus, the
        # user's agents under /run/user), so it is empty here but for the resolver's files DNS may need.
        args += ["--tmpfs", "/run"]
        for kept in _RUN_KEPT:
            if Path(kept).exists():
                args += ["--ro-bind", kept, kept]
        # After the /tmp mount, so a workspace below /tmp is the real one, not the empty tmpfs.
        args += ["--bind" if self.policy == "workspace-write" else "--ro-bind", real, real]
        return [*args, "--chdir", str(workdir), "--", *command]

    def refusal_note(self) -> str:
        """The line a failed command's result carries, so the model knows the sandbox may be why."""
        blocked = "writes outside the workspace" if self.policy == "workspace-write" else "all file writes"
        if not self.network:
            blocked += " and network access"
        return f"[sandbox: {self.policy}; {blocked} are blocked]"


def policy_text(policy: Policy, *, network: bool) -> str:
    """The runtime-context statement of `policy`, in the original's words for its file policies."""
    if policy == "danger-full-access":
        return (
            "Current DSH file policy: danger-full-access. The DSH file sandbox does not restrict file modifications "
            "by available operations."
        )
    net = "Network access is allowed." if network else "Network access is disabled."
    if policy == "workspace-write":
        return (
            "Current DSH file policy: workspace-write. The DSH file sandbox runs each bash command with only the "
            "workspace ({{cwd}}) writable; the rest of the filesystem is read-only and /tmp is private to the "
            f"command. {net}"
        )
    return (
        "Current DSH file policy: read-only. The DSH file sandbox runs each bash command with the whole filesystem "
        f"read-only, the workspace included; /tmp is private to the command. {net}"
    )
