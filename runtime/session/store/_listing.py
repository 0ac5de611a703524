"""The SQLite store's schema facts and session listing without msgspec: the schema version, the tables a dsh store
has, the `sessions` columns, the listing query and the length of a session's log. `SessionStore` (`sqlite`) reads
with them, and `read_listing` gives `dsh sessions list` its plain rows before anything heavy is imported, from a
store that opening as a `SessionStore` would leave untouched (no creation, no migration, no journal-mode change);
`read_tables` lets `--store` be checked before it is opened. Standard library only (sqlite3)."""

from __future__ import annotations

import sqlite3

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from typing import Any

__all__ = [
    "LAST_SEQ_QUERY",
    "SCHEMA_VERSION",
    "SESSIONS_QUERY",
    "SESSION_COLUMNS",
    "SQLITE_MAGIC",
    "STORE_TABLES",
    "log_length",
    "read_listing",
    "read_tables",
]

SCHEMA_VERSION = 3
"""`PRAGMA user_version` of a store this dsh writes; `SessionStore` migrates an older one on opening."""
STORE_TABLES = frozenset({"sessions", "events"})
"""The tables every dsh store has (whatever its schema version)."""
SQLITE_MAGIC = b"SQLite format 3\x00"
"""How every SQLite database file starts."""
SESSION_COLUMNS = "id, created_at, cwd, parent_id, seed_length, inherits, delegation_depth, spawned_by, imported_from, header_extra"
"""The `sessions` columns in the order of `SessionInfo`'s fields, which they are named after."""
SESSIONS_QUERY = f"SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at, id"
"""Every session's row, oldest first."""
LAST_SEQ_QUERY = "SELECT max(seq) FROM events WHERE session_id = ?"
"""A session's own highest seq (NULL without events of its own): with its row, its log's length (`log_length`)."""


def log_length(inherits: bool, seed_length: int | None, top: int | None) -> int:
    """A session's full log length from its row and its own highest seq (`top`, None without events): a fork child
    is at least as long as the prefix it inherits."""
    own = 0 if top is None else top + 1
    return max(own, seed_length or 0) if inherits else own


def _uri(path: str) -> str | None:
    # a read-write URI that never creates the file (a plain path would, if it vanished since it was checked)
    import os.path

    absolute = os.path.abspath(path)
    if absolute.startswith("//"):  # would read as a URI authority
        return None
    quoted = absolute.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{quoted}?mode=rw"


def read_tables(path: str | os.PathLike[str]) -> set[str]:
    """The tables of the SQLite database file at `path`, opened read-only (nothing is created or changed); raises
    `sqlite3.DatabaseError` for a file that is not a database (or that SQLite cannot read there)."""
    from pathlib import Path

    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def read_listing(path: str) -> list[tuple[tuple[Any, ...], int]] | None:
    """Every session of the store file at `path`, oldest first: its row (`SESSION_COLUMNS`) and its log's length.
    None (having changed nothing) when the file is not a dsh store as `SessionStore` would open it without writing:
    not an SQLite database, no dsh tables, another schema version (an older one `SessionStore` would migrate), not
    in WAL mode (which `SessionStore` would switch on), or any error of SQLite's (a busy store included)."""
    uri = _uri(path)
    if uri is None:
        return None
    try:
        with open(path, "rb") as handle:
            if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return None
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    except (OSError, sqlite3.Error):
        return None
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            return None
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            return None
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables >= STORE_TABLES:
            return None
        conn.execute("BEGIN")  # one read snapshot for the rows and their lengths
        listing = [
            (row, log_length(bool(row[5]), row[4], conn.execute(LAST_SEQ_QUERY, (row[0],)).fetchone()[0]))
            for row in conn.execute(SESSIONS_QUERY).fetchall()
        ]
        conn.execute("COMMIT")
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return listing
