"""A damaged store is named, never "a bug in dsh": a damaged page, a read-only file or mount, a full disk (the
session id still printed), a row dsh would not write inserted at the right seq by another client, a gap left by a
client that dropped the triggers: each is one line naming the store and what is wrong, and exit status 2."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.plugins.llm_openai.loopback import loopback
from tests.runtime.cli.helpers import DSH, answer, deployment, plain_env

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "fixtures" / "harness" / "bash-tool-turn" / "session.jsonl"
ROOT_USER = os.geteuid() == 0
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def dsh(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, *DSH, *args], capture_output=True, text=True, env=plain_env(), cwd=ROOT, timeout=120
    )


def named(done: subprocess.CompletedProcess[str], store: Path, *words: str) -> None:
    """One error line, naming the store and what is wrong, exit status 2."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: session store {store}: "), lines[0]
    for word in words:
        assert word in lines[0]
    assert "bug in dsh" not in done.stderr


def imported(path: Path) -> str:
    done = dsh("sessions", "import", str(FIXTURE), "--store", str(path))
    assert done.returncode == 0, done.stderr
    return done.stdout.split("as session ")[1].split()[0]


def test_a_damaged_page_is_named(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    session = imported(store)
    with store.open("r+b") as handle:  # page 3 onwards: the events table's pages, past the header and schema
        handle.seek(2 * 4096)
        handle.write(b"\xff" * 4096)
    named(dsh("sessions", "show", session, "--store", str(store)), store, "damaged")
    named(dsh("sessions", "export", session, "--store", str(store)), store, "damaged")


@pytest.fixture
def small_mount(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs of the test's own (root only)."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.mark.skipif(not ROOT_USER, reason="mounting needs root")
def test_a_store_on_a_read_only_mount_is_named(tmp_path: Path, small_mount: Path) -> None:
    store = small_mount / "s.db"
    session = imported(store)
    subprocess.run(["mount", "-o", "remount,ro", str(small_mount)], check=True)
    named(dsh("sessions", "show", session, "--store", str(store)), store, "read-only")
    named(dsh("sessions", "import", str(FIXTURE), "--store", str(store)), store, "read-only")


@pytest.mark.skipif(
    not (ROOT_USER and shutil.which("setpriv")), reason="needs root to run dsh as nobody (root ignores chmod)"
)
def test_a_read_only_store_file_is_named() -> None:
    home = Path(tempfile.mkdtemp())  # in /tmp itself: nobody cannot pass pytest's private directories
    try:
        store = home / "s.db"
        imported(store)
        for path in (home, store):
            shutil.chown(path, user="nobody")
        home.chmod(0o755)
        store.chmod(0o444)
        as_nobody = tuple(NOBODY)
        named(
            dsh("sessions", "import", str(FIXTURE), "--store", str(store), prefix=as_nobody),
            store,
            "read-only",
        )
        home.chmod(0o700)
        shutil.chown(home, user="root")  # now nobody cannot even reach it
        named(dsh("sessions", "list", "--store", str(store), prefix=as_nobody), store, "cannot be opened")
    finally:
        shutil.rmtree(home)


@pytest.mark.skipif(not ROOT_USER, reason="mounting needs root")
@pytest.mark.anyio
async def test_a_full_disk_is_named_and_the_session_id_still_printed(
    tmp_path: Path, small_mount: Path
) -> None:
    store = small_mount / "s.db"
    config = tmp_path / "deployment.yml"
    async with loopback(answer("x" * 400_000)) as server:
        config.write_text(deployment(server.base_url))
        imported(store)  # the store exists; then the disk fills up
        free = os.statvfs(small_mount).f_bavail * os.statvfs(small_mount).f_frsize
        (small_mount / "fill").write_bytes(b"\0" * max(free - 64 * 1024, 0))
        done = await anyio.run_process(
            [*DSH, "run", "hello", "--config", str(config), "--store", str(store)],
            env=plain_env(),
            check=False,
        )
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "bug in dsh" not in err
    lines = err.strip().splitlines()
    assert lines[-2].startswith("session "), err  # the session the turn was in, for resuming it
    assert lines[-1].startswith(f"error: session store {store}: the disk it is on is full"), err


def _insert(store: Path, session: str, row: tuple[object, ...], *, drop: str) -> None:
    conn = sqlite3.connect(store, isolation_level=None)
    conn.execute(f"DROP TRIGGER {drop}")
    seq = conn.execute("SELECT max(seq) + 1 FROM events WHERE session_id = ?", (session,)).fetchone()[0]
    conn.execute(
        "INSERT INTO events (session_id, seq, type, time, data, surface_op) VALUES (?, ?, ?, 0, ?, ?)",
        (session, seq + row[0], *row[1:]),
    )
    conn.close()


@pytest.mark.parametrize(
    ("row", "drop", "words"),
    [
        ((0, "user/message", '{"content":[]}', "bogus"), "events_valid", ("is not a row dsh writes",)),
        ((0, "plugin/x", "{not json", None), "events_valid", ("is not a row dsh writes",)),
        ((3, "plugin/x", "{}", None), "events_next_seq", ("has a gap in its log",)),
    ],
    ids=["bogus surface_op", "non-JSON data", "gap"],
)
def test_another_clients_rows_are_named_and_never_exported(
    tmp_path: Path, row: tuple[object, ...], drop: str, words: tuple[str, ...]
) -> None:
    store = tmp_path / "s.db"
    session = imported(store)
    _insert(store, session, row, drop=drop)
    named(dsh("sessions", "show", session, "--store", str(store)), store, *words)
    exported = dsh("sessions", "export", session, "--store", str(store))
    named(exported, store, *words)
    out = tmp_path / "out.jsonl"
    out.write_text(exported.stdout)
    back = dsh("sessions", "import", str(out), "--store", str(tmp_path / "back.db"))
    assert back.returncode == 0, back.stderr  # whatever export wrote, its import reads
