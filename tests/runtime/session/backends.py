"""The two store backends the conformance suite runs against: where a test's store lives (a SQLite file, or a
fresh schema of the test session's PostgreSQL server), how to open it again, and a raw client connection to it
(to show the database itself refuses what the store would never send)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from dsh.runtime.session import Clock, IdMinter, SessionStoreProtocol, open_store

__all__ = ["BACKENDS", "INTEGRITY_ERRORS", "Backend"]

BACKENDS = ("sqlite", "postgresql")
INTEGRITY_ERRORS: tuple[type[Exception], ...] = (sqlite3.IntegrityError, psycopg.IntegrityError)


@dataclass(frozen=True)
class Backend:
    """One store location: `spec` is what `--store` takes (a path or a URL)."""

    name: str
    spec: str

    def open(self, *, clock: Clock | None = None, ids: IdMinter | None = None) -> SessionStoreProtocol:
        if self.name == "sqlite":
            # `synchronous=NORMAL` as the SQLite tests always ran: the tests kill clients, not the machine
            from dsh.runtime.session import SessionStore

            return SessionStore(Path(self.spec), clock=clock, ids=ids, synchronous="NORMAL")
        return open_store(self.spec, clock=clock, ids=ids)

    @contextmanager
    def raw(self) -> Iterator[RawConnection]:
        """A plain client connection (autocommit), not the store's."""
        if self.name == "sqlite":
            conn = sqlite3.connect(self.spec, isolation_level=None)
            try:
                yield RawConnection(conn, "?")
            finally:
                conn.close()
        else:
            with psycopg.connect(self.spec, autocommit=True) as pg:
                yield RawConnection(pg, "%s")


class RawConnection:
    """`execute` with `?` placeholders on either backend; returns every row."""

    def __init__(self, conn: Any, placeholder: str) -> None:
        self._conn = conn
        self._placeholder = placeholder

    def execute(self, query: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        cursor = self._conn.execute(query.replace("?", self._placeholder), tuple(params))
        return list(cursor.fetchall()) if cursor.description is not None else []
