"""A throwaway PostgreSQL server on 127.0.0.1 for the tests and benchmarks (initdb + pg_ctl in a temporary
directory), and the pytest fixtures over it: `pg_server` (one per test session) and `pg_url` (a fresh schema per
test, as a `postgresql://` URL whose `search_path` names it).

PostgreSQL refuses to run as root, so under root (CI) the server runs as `nobody`, owning its directory. Where the
server binaries are missing the PostgreSQL tests are skipped, except under `CI=true`, where that is a failure."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

__all__ = ["PG_BIN", "PgServer", "pg_server", "pg_url"]

PG_BIN = Path(os.environ.get("DSH_PG_BIN", "/usr/lib/postgresql/15/bin"))
_USER = "nobody"
_SCHEMAS = itertools.count(1)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PgServer:
    """One running server: superuser `dsh`, trust authentication on loopback, database `dsh`."""

    def __init__(self, *, durable: bool = False) -> None:
        if not (PG_BIN / "initdb").exists():
            raise FileNotFoundError(f"no PostgreSQL server binaries in {PG_BIN} (set DSH_PG_BIN)")
        root = os.geteuid() == 0
        # as root, in /tmp itself: `nobody` must reach the directory, and $TMPDIR may be under a private one
        self.dir = Path(tempfile.mkdtemp(prefix="dsh-pg-", dir="/tmp" if root else None))
        self.port = _free_port()
        self._as: list[str] = []
        if root:
            shutil.chown(self.dir, user=_USER)
            self._as = ["setpriv", "--reuid", _USER, "--regid", "nogroup", "--clear-groups", "--"]
        data = self.dir / "data"
        self._run(
            str(PG_BIN / "initdb"), "-D", str(data), "-U", "dsh", "--auth=trust", "-E", "UTF8", "--no-sync"
        )
        settings = [
            "-h 127.0.0.1",
            f"-p {self.port}",
            f"-k {self.dir}",
            "-c max_connections=200",
        ]
        if not durable:  # the tests kill clients, never the server: its own durability is not under test
            settings += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self._data = data
        self._settings = " ".join(settings)
        self.start()
        self.admin(("CREATE DATABASE dsh",), database="postgres")

    def start(self) -> None:
        """Start the server (again, after `stop_for_now`), on the same port and data."""
        self._run(
            str(PG_BIN / "pg_ctl"), "-D", str(self._data), "-o", self._settings, "-l", str(self.dir / "log"), "-w",
            "start",
        )  # fmt: skip

    def stop_for_now(self) -> None:
        """Stop the server, keeping its data for `start` (a restart under running clients)."""
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self._data), "-m", "fast", "-w", "stop")

    def _run(self, *command: str) -> None:
        done = subprocess.run([*self._as, *command], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed ({done.returncode}): {done.stderr or done.stdout}"
            )

    def url(self, schema: str | None = None, *, database: str = "dsh", password: str | None = None) -> str:
        """A URL of the server; with `schema`, its `search_path` names that schema."""
        user = "dsh" if password is None else f"dsh:{quote(password)}"
        url = f"postgresql://{user}@127.0.0.1:{self.port}/{database}"
        return url if schema is None else f"{url}?options=-csearch_path%3D{schema}"

    def admin(self, statements: tuple[str, ...], *, database: str = "dsh") -> None:
        import psycopg

        with psycopg.connect(self.url(database=database), autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.encode())

    def new_schema(self) -> str:
        """A fresh, empty schema's URL."""
        name = f"t{os.getpid()}_{next(_SCHEMAS)}"
        self.admin((f"CREATE SCHEMA {name}",))
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run(str(PG_BIN / "pg_ctl"), "-D", str(self._data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    if not (PG_BIN / "initdb").exists():
        message = (
            f"PostgreSQL server binaries not found in {PG_BIN} (install postgresql-15, or set DSH_PG_BIN)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; CI runs the PostgreSQL tests on every run")
        pytest.skip(message)
    server = PgServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh schema of the session's server, as a store URL."""
    return pg_server.new_schema()
