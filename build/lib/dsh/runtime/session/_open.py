"""`open_store`: the one place a store spec (a `--store` value, `$DSH_STORE`) becomes a store: a `postgresql://`
URL opens `PgStore`, anything else is a SQLite file path. `redact_url` is the only form in which a URL is printed."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ._protocol import SessionStoreProtocol
from ._services import Clock, IdMinter
from ._store import SessionStore

__all__ = ["is_postgres_url", "open_store", "redact_url"]


def is_postgres_url(spec: str | Path) -> bool:
    """Whether a store spec names a PostgreSQL database rather than a file."""
    return str(spec).startswith(("postgresql://", "postgres://"))


def redact_url(spec: str | Path) -> str:
    """`spec` as it may be printed: a URL loses its password (a path is returned as it is)."""
    text = str(spec)
    if not is_postgres_url(text):
        return text
    parts = urlsplit(text)
    query = [
        (key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True) if key != "password"
    ]
    if parts.password is None and len(query) == len(parse_qsl(parts.query, keep_blank_values=True)):
        return text
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), parts.fragment))


def open_store(
    spec: str | Path, *, clock: Clock | None = None, ids: IdMinter | None = None
) -> SessionStoreProtocol:
    """The store `spec` names: a `postgresql://` (or `postgres://`) URL, or the path of a SQLite file."""
    if is_postgres_url(spec):
        from ._pg import PgStore  # imported here: a SQLite user never loads psycopg

        return PgStore(str(spec), clock=clock, ids=ids)
    return SessionStore(Path(spec), clock=clock, ids=ids)
