"""Which session store a front end opens: `--store PATH` (a new file in an existing directory, or an existing dsh
store), `--store postgresql://...` (a PostgreSQL database, `runtime.session.open_store`) or the user's default (`$XDG_DATA_HOME/dsh/sessions.db`, its directories made on demand), checked before
SQLite touches it, so a typo never creates directories or an empty database and a foreign file is a clear error."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from runtime.kernel.errors import SessionError
from runtime.session import SessionNotFoundError, SessionStore, SessionStoreProtocol, is_postgres_url
from runtime.session import open_store as open_store_at

__all__ = ["check_store_path", "default_store_path", "open_store", "resolve_session", "scratch_store"]

_SQLITE_MAGIC = b"SQLite format 3\x00"
_DSH_TABLES = {"sessions", "events"}


def default_store_path() -> Path:
    """`$XDG_DATA_HOME/dsh/sessions.db`, or `~/.local/share/dsh/sessions.db`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "dsh" / "sessions.db"


def check_store_path(path: Path) -> None:
    """Refuse a `--store` that would not open as a dsh store: its directory missing, a directory, or a file that
    is not an SQLite database holding dsh's tables. A missing or empty file is a new store."""
    if path.is_dir():
        raise SessionError(
            f"--store {path}: a directory; expected a session store file (e.g. {path}/sessions.db)"
        )
    if not path.parent.is_dir():
        raise SessionError(
            f"--store {path}: the directory {path.parent} does not exist; create it, or pass a file in an "
            "existing directory (a new store file is created there)"
        )
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as handle:
        magic = handle.read(len(_SQLITE_MAGIC))
    if magic != _SQLITE_MAGIC:
        raise SessionError(f"--store {path}: not a dsh session store (not an SQLite database)")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as error:
        raise SessionError(f"--store {path}: not a dsh session store ({error})") from error
    if tables and not tables >= _DSH_TABLES:
        found = ", ".join(sorted(tables))
        raise SessionError(
            f"--store {path}: an SQLite database but not a dsh session store (its tables: {found}; a dsh store has "
            "sessions and events)"
        )


def open_store(store: str | Path | None, *, looking_for: str | None = None) -> SessionStoreProtocol:
    """The session store `--store` names (a URL opens PostgreSQL; a path is checked by `check_store_path`), else
    the user's default one. Looking for a session (`looking_for`, its id) in a store file that does not exist yet is
    `SessionNotFoundError`, and creates nothing."""
    if store is not None and is_postgres_url(store):
        return open_store_at(store)
    path = default_store_path() if store is None else Path(store)
    if store is not None:
        check_store_path(path)
    if looking_for is not None and not path.exists():
        raise SessionNotFoundError(looking_for, store=f"{path} (no store there yet)")
    return SessionStore(path)


def scratch_store(directory: Path) -> SessionStore:
    """A throwaway store in `directory` (a temporary one the caller removes): for commands that load a deployment
    to inspect it, never to run sessions."""
    return SessionStore(directory / "sessions.db")


def resolve_session(store: SessionStoreProtocol, given: str) -> str:
    """The id of the session `given` names: its whole id, or (as git allows) a prefix that starts exactly one
    session's id. No match is `SessionNotFoundError`; several are an error listing them."""
    try:
        return store.info(given).id
    except SessionNotFoundError:
        if not given:
            raise
        matches = [info.id for info in store.sessions() if info.id.startswith(given)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise
    shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
    raise SessionError(
        f'session id prefix "{given}" is ambiguous in {store.location}: {len(matches)} sessions start with it ({shown}); '
        "type more of the id"
    )
