"""A store URL's password is never shown: not in `dsh`'s own `/proc/PID/cmdline` while it runs, not in `dsh chat`'s
leaving hint, not in libpq's messages about a URL it cannot parse (which quote the URL or the bad piece of it)."""

from __future__ import annotations

import ast
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.runtime.session import redact, redact_url, url_password
from tests.pg_server import PgServer
from tests.runtime.cli.helpers import DSH, deployment, plain_env

PASSWORD = "pw-7c1e9a4b"


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="Linux's /proc")
def test_the_password_leaves_dshs_command_line_while_it_runs(tmp_path: Path) -> None:
    # a server that accepts the connection and never answers: dsh waits in libpq, long past its entry point
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(60)
        port = server.getsockname()[1]
        url = f"postgresql://dsh:{PASSWORD}@127.0.0.1:{port}/dsh"
        dsh = subprocess.Popen(
            [*DSH, "sessions", "list", "--store", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=plain_env(),
        )
        try:
            connection, _ = server.accept()
            with connection:
                cmdline = Path(f"/proc/{dsh.pid}/cmdline").read_bytes()
        finally:
            dsh.kill()
            dsh.wait(timeout=30)
    assert PASSWORD.encode() not in cmdline
    assert f"postgresql://dsh@127.0.0.1:{port}/dsh".encode() in cmdline.split(b"\0")
    assert b"sessions\0list\0--store\0" in cmdline  # the other arguments are where they were


HIDE = (
    "import sys\n"
    "from dsh.runtime.cli._argv import hide_url_passwords\n"
    "before = open('/proc/self/cmdline', 'rb').read()\n"
    "hidden = hide_url_passwords()\n"
    "after = open('/proc/self/cmdline', 'rb').read()\n"
    "print(repr((before, hidden, after, sys.argv[1:])))\n"
)


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="Linux's /proc")
def test_hiding_rewrites_only_the_kernels_copy_of_the_arguments() -> None:
    args = [f"--store=postgresql://u:{PASSWORD}@h/db", "plain", f"postgresql://h/db?password={PASSWORD}&x=1"]
    done = subprocess.run([sys.executable, "-c", HIDE, *args], capture_output=True, text=True, check=True)
    before, hidden, after, argv = ast.literal_eval(done.stdout)
    assert PASSWORD.encode() in before  # the attack works without it: the test can fail
    assert hidden
    assert PASSWORD.encode() not in after
    assert len(after) == len(before)
    assert [part for part in after.split(b"\0") if part][-3:] == [
        b"--store=postgresql://u@h/db",
        b"plain",
        b"postgresql://h/db?x=1",
    ]
    assert argv == args  # dsh itself still has the password to connect with


def test_no_password_no_rewrite() -> None:
    done = subprocess.run(
        [sys.executable, "-c", HIDE, "--store", "postgresql://u@h/db", "/tmp/a@b"],
        capture_output=True,
        text=True,
    )
    before, hidden, after, _ = ast.literal_eval(done.stdout)
    assert (hidden, after) == (False, before)


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://dsh:{PASSWORD}%zz@127.0.0.1:9/dsh",  # libpq: invalid percent-encoded token: "PW%zz"
        f"postgresql://dsh:{PASSWORD}@[::1/dsh",  # libpq quotes the whole URI
        f"postgresql://dsh:{PASSWORD}@127.0.0.1:9/dsh?sslmode=bogus",
        f"postgresql://dsh@127.0.0.1:9/dsh?password={PASSWORD}&connect_timeout=nope",
    ],
)
def test_libpqs_messages_about_a_bad_url_are_shown_without_the_password(url: str) -> None:
    done = subprocess.run(
        [*DSH, "sessions", "list", "--store", url],
        capture_output=True,
        text=True,
        env=plain_env(),
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    assert "cannot open the session store postgresql://dsh@" in done.stderr
    assert "bug in dsh" not in done.stderr


def test_redaction_of_urls_and_of_text() -> None:
    assert (
        redact_url(f"postgresql://u:{PASSWORD}@h:5432/db?sslmode=require")
        == "postgresql://u@h:5432/db?sslmode=require"
    )
    assert (
        redact_url(f"postgres://h/db?password={PASSWORD}&sslmode=require")
        == "postgres://h/db?sslmode=require"
    )
    assert redact_url("/home/u/sessions.db") == "/home/u/sessions.db"
    assert (
        redact_url("postgresql://u:pw@[::1") == "postgresql://u@[::1"
    )  # malformed: still redacted, no error
    assert url_password("https://u:p%40ss@proxy") == "p%40ss"
    assert url_password("postgresql://u@h/db") is None
    message = 'invalid percent-encoded token: "p@ss%zz" in postgresql://u:p%40ss%zz@h'
    assert (
        redact(message, "postgresql://u:p%40ss%zz@h")
        == 'invalid percent-encoded token: "***" in postgresql://u@h'
    )


def test_chats_leaving_hint_names_the_store_without_its_password(tmp_path: Path, pg_server: PgServer) -> None:
    # trust authentication: the password is sent, not checked
    url = pg_server.new_schema().replace("dsh@", f"dsh:{PASSWORD}@")
    config = tmp_path / "deployment.yml"
    config.write_text(deployment("http://127.0.0.1:9/v1"))
    result = subprocess.run(
        [*DSH, "chat", "--config", str(config), "--store", url],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=plain_env(),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "continue it with: dsh chat --session" in result.stderr
    assert f"--store {shlex.quote(redact_url(url))}" in result.stderr
    assert PASSWORD not in result.stdout + result.stderr
