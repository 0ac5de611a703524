"""Which session store a front end opens: `--store PATH` (a new file in an existing directory, or an existing dsh
store), `--store postgresql://...` (a PostgreSQL database, `dsh.runtime.session.open_store`) or the user's default
(`$XDG_DATA_HOME/dsh/sessions.db`, its directories made on demand), checked before SQLite touches it, so a typo
never creates directories or an empty database and a foreign file is a clear error. `existing_store_file` is what
`dsh sessions list` reads before anything heavy is imported, so this module imports the stores only when it opens
one."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from dsh.runtime.session import SessionStore, SessionStoreProtocol

__all__ = [
    "check_store_path",
    "default_store_path",
    "existing_store_file",
    "open_store",
    "resolve_session",
    "scratch_store",
]


def _default_store_file() -> str:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "dsh", "sessions.db")


def default_store_path() -> Path:
    """`$XDG_DATA_HOME/dsh/sessions.db`, or `~/.local/share/dsh/sessions.db`."""
    from pathlib import Path

    return Path(_default_store_file())


def existing_store_file(store: str | None) -> str | None:
    """The file `open_store(store)` opens when it is there already (not empty), or None: a URL (PostgreSQL's, which
    `open_store` connects to), or a file `open_store` would create or refuse (a directory, a missing directory)."""
    if store is not None and "://" in store:
        return None
    path = _default_store_file() if store is None else store
    try:
        return path if os.path.isfile(path) and os.path.getsize(path) > 0 else None
    except OSError:  # vanished meanwhile, or unreadable: open_store's to report
        return None


def check_store_path(path: Path) -> None:
    """Refuse a `--store` that would not open as a dsh store: its directory missing, a directory, or a file that
    is not an SQLite database holding dsh's tables. A missing or empty file is a new store."""
    import sqlite3  # its error type only: the query is the store's (`read_tables`)

    from dsh.runtime.kernel.errors import SessionError
    from dsh.runtime.session import SQLITE_MAGIC, STORE_TABLES, read_tables

    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):  # a new store, or a missing directory: said below
        pass
    except OSError as error:  # unreachable to this user (its mode, a directory on the way)
        from dsh.runtime.session import StoreError

        raise StoreError(str(path), "cannot-open", error.strerror or str(error)) from error
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
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(SQLITE_MAGIC))
    except OSError as error:  # unreadable to this user (its mode, a directory on the way)
        from dsh.runtime.session import StoreError

        raise StoreError(str(path), "cannot-open", error.strerror or str(error)) from error
    if magic != SQLITE_MAGIC:
        raise SessionError(f"--store {path}: not a dsh session store (not an SQLite database)")
    try:
        tables = read_tables(path)
    except sqlite3.DatabaseError as error:
        if not _writable(path):  # a read-only file or mount: a WAL store cannot even be read there
            from dsh.runtime.session import StoreError

            raise StoreError(str(path), "read-only", str(error)) from error
        raise SessionError(f"--store {path}: not a dsh session store ({error})") from error
    if tables and not tables >= STORE_TABLES:
        found = ", ".join(sorted(tables))
        raise SessionError(
            f"--store {path}: an SQLite database but not a dsh session store (its tables: {found}; a dsh store has "
            "sessions and events)"
        )


def _writable(path: Path) -> bool:
    """Whether dsh can write `path` and create files beside it (SQLite's -wal and -shm): not on a read-only mount,
    not a read-only file, not in a read-only directory."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return False
    except OSError:
        return False
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def open_store(store: str | Path | None, *, looking_for: str | None = None) -> SessionStoreProtocol:
    """The session store `--store` names (a URL opens PostgreSQL; a path is checked by `check_store_path`), else
    the user's default one. Looking for a session (`looking_for`, its id) in a store file that does not exist yet is
    `SessionNotFoundError`, and creates nothing."""
    from pathlib import Path

    from dsh.runtime.session import SessionNotFoundError, SessionStore, is_postgres_url
    from dsh.runtime.session import open_store as open_store_at

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
    from dsh.runtime.session import SessionStore

    return SessionStore(directory / "sessions.db")


def resolve_session(store: SessionStoreProtocol, given: str) -> str:
    """The id of the session `given` names: its whole id, or (as git allows) a prefix that starts exactly one
    session's id. No match is `SessionNotFoundError`; several are an error listing them."""
    from dsh.runtime.kernel.errors import SessionError
    from dsh.runtime.session import SessionNotFoundError

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
