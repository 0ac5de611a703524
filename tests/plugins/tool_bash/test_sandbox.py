"""The file policies: under `workspace-write` a command writes the workspace and nothing else, sees a private /tmp
and, unless the network is allowed, cannot open a socket to a server the test runs on 127.0.0.1; under `read-only`
it writes nothing; a refused command is a normal result that says the sandbox may be why; the policy is stated to
the model as a runtime context; and a sandbox that cannot be had fails the load, never runs unconfined."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from dsh.plugins.tool_bash import SANDBOX_CONTEXT, SandboxUnavailableError, plugin, policy_text
from dsh.runtime.kernel import ConfigError, Context
from dsh.runtime.prompt import SYSTEM_PROMPT, AssembleContext

from ..tool_host import tool_host
from .test_bash import bash


def host(**config: object) -> Context:
    ctx = tool_host()
    ctx.plugin(plugin, config)
    return ctx


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.1)
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.anyio
async def test_workspace_write_writes_the_workspace_and_nothing_else(workspace: Path, tmp_path: Path) -> None:
    ctx = host(sandbox="workspace-write")
    inside = await bash(
        ctx, workspace, "echo kept > inside.txt && mkdir -p sub && echo deep > sub/f && cat sub/f"
    )
    assert (inside.text, (workspace / "inside.txt").read_text()) == ("deep\n", "kept\n")
    outside = Path("/usr/local/dsh-sandbox-probe")
    attempts = [
        f"touch {outside}",
        "touch /var/tmp/dsh-sandbox-probe",
        "touch /etc/dsh-probe",
    ]
    for command in attempts:
        result = await bash(ctx, workspace, command)
        assert result.meta["exitCode"] != 0, command
        assert result.text.splitlines()[-2:] == [
            "[sandbox: workspace-write; writes outside the workspace and network access are blocked]",
            f"[exit code: {result.meta['exitCode']}]",
        ]
        assert not result.is_error  # a normal result the model reads, like any failed command
    assert "Read-only file system" in (await bash(ctx, workspace, f"touch {outside}")).text
    assert not await anyio.Path(outside).exists()
    # The user's home, wherever it is: read-only, or (a HOME under /tmp) in the command's private /tmp; either way
    # a write there never reaches the host.
    home = Path.home() / "dsh-sandbox-probe"
    await bash(ctx, workspace, f"mkdir -p {home.parent} && touch {home}")
    assert not await anyio.Path(home).exists()
    # Beside the workspace, below the real /tmp: the command writes its own private /tmp, which the host never sees.
    beside = tmp_path / "beside.txt"
    await bash(ctx, workspace, f"echo x > {beside}")
    assert not await anyio.Path(beside).exists()
    assert not await anyio.Path("/var/tmp/dsh-sandbox-probe").exists()


@pytest.mark.anyio
@pytest.mark.parametrize(
    "escape",
    [
        "mount -o remount,rw /",  # root's capabilities would allow it
        "unshare -r -m sh -c 'mount -o remount,rw /'",  # so would a nested user namespace's
        "mount -t tmpfs none /etc",
    ],
)
async def test_no_remount_makes_the_root_writable(workspace: Path, escape: str) -> None:
    probe = Path("/etc/dsh-sandbox-remount-probe")
    result = await bash(host(sandbox="workspace-write"), workspace, f"{escape}; touch {probe}")
    assert not await anyio.Path(probe).exists(), result.text
    assert "Read-only file system" in result.text


# Writes the value each setting already has, so a sandbox that failed would change nothing on the host.
_SAME_VALUE_WRITES = [
    "cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern",
    "cat /proc/sys/vm/swappiness > /proc/sys/vm/swappiness",
    "cat /proc/sys/kernel/hostname > /proc/sys/kernel/hostname",
    "cat /proc/sys/fs/suid_dumpable > /proc/sys/fs/suid_dumpable",
]

# Everything in the command's /proc that it may write, outside its own processes' directories.
_WRITABLE_PROC = """python3 - <<'EOF'
import os
found = []
for root, dirs, files in os.walk("/proc"):
    top = root.split("/")[2:3]
    if top and (top[0].isdigit() or top[0] in ("self", "thread-self")):
        dirs[:] = []
        continue
    found += [p for p in (os.path.join(root, n) for n in files) if not os.path.islink(p) and os.access(p, os.W_OK)]
print(len(found), found[:5])
EOF"""


@pytest.mark.anyio
@pytest.mark.skipif(
    os.geteuid() != 0, reason="the kernel's settings are writable from a sandbox only for root"
)
@pytest.mark.parametrize("policy", ["workspace-write", "read-only"])
async def test_the_kernels_settings_are_read_only_even_for_root(workspace: Path, policy: str) -> None:
    # Was: as root, `--proc /proc` left /proc/sys writable, so `kernel.core_pattern` made the host run any program
    # as root. Unconfined, root writes them (the check would pass vacuously if it did not).
    assert (await bash(host(), workspace, _SAME_VALUE_WRITES[1])).meta["exitCode"] == 0
    ctx = host(sandbox=policy)
    for write in _SAME_VALUE_WRITES:
        result = await bash(ctx, workspace, write)
        assert result.meta["exitCode"] != 0, write
        assert "Read-only file system" in result.text, write
    for trigger in ("/proc/sysrq-trigger", "/proc/mtrr"):
        if await anyio.Path(trigger).exists():
            assert (await bash(ctx, workspace, f"test -w {trigger}")).meta["exitCode"] != 0, trigger
    assert (await bash(ctx, workspace, _WRITABLE_PROC)).text.startswith("0 []"), policy
    sys_writable = "find /sys -type f -writable 2>/dev/null | head -3"
    assert (await bash(ctx, workspace, sys_writable)).text == "(no output)"


@pytest.mark.anyio
async def test_tmp_is_private_to_each_command(workspace: Path) -> None:
    ctx = host(sandbox="workspace-write")
    probe = "/tmp/dsh-sandbox-private-probe"
    written = await bash(ctx, workspace, f"echo mine > {probe} && cat {probe}")
    assert written.text == "mine\n"
    assert not await anyio.Path(probe).exists()
    assert (await bash(ctx, workspace, f"cat {probe}")).meta["exitCode"] == 1


@pytest.mark.anyio
async def test_without_network_a_command_cannot_reach_a_local_server(
    workspace: Path, listener: Listener
) -> None:
    connect = f"exec 3<>/dev/tcp/127.0.0.1/{listener.port} && echo connected"
    refused = await bash(host(sandbox="workspace-write"), workspace, connect)
    assert "connected" not in refused.text
    assert refused.meta["exitCode"] != 0
    python = (
        f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {listener.port}), timeout=2)'"
    )
    assert (await bash(host(sandbox="workspace-write"), workspace, python)).meta["exitCode"] != 0
    assert listener.accepted == 0
    allowed = await bash(host(sandbox="workspace-write", sandbox_network=True), workspace, connect)
    assert allowed.text == "connected\n"
    for _ in range(500):
        if listener.accepted:
            break
        await anyio.sleep(0.01)
    assert listener.accepted == 1


@pytest.mark.anyio
@pytest.mark.skipif(os.geteuid() != 0, reason="creating a socket under /run needs root")
async def test_a_daemon_socket_under_run_is_out_of_reach(workspace: Path) -> None:
    # A read-only mount does not stop connect() on a unix socket: a daemon's socket (docker's, dbus') must be hidden.
    path = f"/run/dsh-sandbox-probe-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    try:
        connect = f"python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"{path}\")'"
        assert (await bash(host(), workspace, connect)).meta["exitCode"] == 0  # reachable unconfined
        for policy in ("workspace-write", "read-only"):
            result = await bash(host(sandbox=policy, sandbox_network=True), workspace, connect)
            assert result.meta["exitCode"] != 0
            assert "No such file or directory" in result.text
    finally:
        server.close()
        os.unlink(path)


@pytest.mark.anyio
async def test_read_only_writes_nothing_not_even_the_workspace(workspace: Path) -> None:
    (workspace / "seen.txt").write_text("visible\n")
    ctx = host(sandbox="read-only")
    assert (await bash(ctx, workspace, "cat seen.txt")).text == "visible\n"
    result = await bash(ctx, workspace, "echo x > new.txt")
    assert "Read-only file system" in result.text
    assert "[sandbox: read-only; all file writes and network access are blocked]" in result.text
    assert not (workspace / "new.txt").exists()


@pytest.mark.anyio
async def test_a_sandboxed_command_still_dies_on_timeout(workspace: Path) -> None:
    result = await bash(host(sandbox="workspace-write"), workspace, "sleep 30", timeoutMs=300)
    assert result.meta == {"exitCode": -9, "timedOut": True}
    assert "[sandbox:" not in result.text  # the timeout, not the sandbox, stopped it


async def contexts(ctx: Context) -> list[tuple[str, str]]:
    assembly = await ctx.get(SYSTEM_PROMPT).assemble(AssembleContext(ctx=ctx))
    # what is sent: a context that renders empty (full access, not stated) is dropped from the snapshot
    return [(context.name, context.text) for context in assembly.contexts if context.text]


@pytest.mark.anyio
async def test_the_policy_is_stated_to_the_model_as_a_runtime_context() -> None:
    assert await contexts(host()) == []
    stated = await contexts(host(sandbox="workspace-write"))
    assert stated == [(SANDBOX_CONTEXT, policy_text("workspace-write", network=False))]
    assert stated[0][1].startswith("Current DSH file policy: workspace-write. The DSH file sandbox ")
    assert stated[0][1].endswith("Network access is disabled.")
    assert (await contexts(host(sandbox="read-only", sandbox_network=True)))[0][1].endswith(
        "Network access is allowed."
    )
    loaded = tool_host()
    bash_plugin = loaded.plugin(plugin, {"sandbox": "read-only"})
    bash_plugin.unload()
    assert await contexts(loaded) == []


def test_without_bubblewrap_a_sandboxed_deployment_fails_to_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailableError, match=r"`bwrap` is not on PATH; install it") as caught:
        host(sandbox="workspace-write")
    assert caught.value.policy == "workspace-write"
    host()  # the unconfined policy needs nothing


def test_bubblewrap_without_namespaces_fails_the_load_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with pytest.raises(SandboxUnavailableError, match="No permissions to creating new namespace"):
        host(sandbox="read-only")


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ConfigError, match="danger-full-access"):
        host(sandbox="sandboxed")
