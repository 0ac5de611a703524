"""`open_store`: the one place a store spec (a `--store` value, `$DSH_STORE`) becomes a store: a `postgresql://`
URL opens `PgStore`, anything else is a SQLite file path (how a URL is printed is `_urls`'s)."""

from __future__ import annotations

from pathlib import Path

from .._services import Clock, IdMinter
from ._protocol import SessionStoreProtocol
from ._urls import is_postgres_url
from .sqlite import SessionStore

__all__ = ["open_store"]


def open_store(
    spec: str | Path, *, clock: Clock | None = None, ids: IdMinter | None = None
) -> SessionStoreProtocol:
    """The store `spec` names: a `postgresql://` (or `postgres://`) URL, or the path of a SQLite file."""
    if is_postgres_url(spec):
        from .pg import PgStore  # imported here: a SQLite user never loads psycopg

        return PgStore(str(spec), clock=clock, ids=ids)
    return SessionStore(Path(spec), clock=clock, ids=ids)
