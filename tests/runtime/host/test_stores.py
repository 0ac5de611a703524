"""Which store a front end opens: `--store` in a missing directory, a directory, a file that is not SQLite, or an
SQLite database without dsh's tables are clear errors that create nothing; a new file in an existing directory is a
new store; a unique prefix of a session id names it, an ambiguous one lists the candidates."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dsh.runtime.host import open_store, resolve_session
from dsh.runtime.kernel import DshError
from dsh.runtime.session import SessionId, SessionNotFoundError, SessionStore


def test_a_store_in_a_missing_directory_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    with pytest.raises(DshError, match=r"the directory .*typo does not exist"):
        open_store(tmp_path / "typo" / "sessions.db")
    assert not (tmp_path / "typo").exists()


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(DshError, match="a directory; expected a session store file"):
        open_store(tmp_path)


def test_a_file_that_is_not_sqlite_is_not_a_store(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(DshError, match=r"not a dsh session store \(not an SQLite database\)"):
        open_store(tmp_path / "notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "hello\n"


def test_a_foreign_database_is_not_a_store(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "other.db")
    conn.execute("CREATE TABLE things (x)")
    conn.commit()
    conn.close()
    with pytest.raises(DshError, match=r"not a dsh session store \(its tables: things;"):
        open_store(tmp_path / "other.db")


def test_a_new_file_in_an_existing_directory_and_an_existing_store_open(tmp_path: Path) -> None:
    with open_store(tmp_path / "new.db") as store:
        store.create(cwd="/w")
    with open_store(tmp_path / "new.db") as store:
        assert len(store.sessions()) == 1


def test_a_unique_prefix_names_a_session(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        first = store.create(session_id=SessionId("abc123")).id
        store.create(session_id=SessionId("abd456"))
        assert resolve_session(store, "abc123") == first
        assert resolve_session(store, "abc") == first
        with pytest.raises(
            DshError, match=r'prefix "ab" is ambiguous .*2 sessions start with it \(abc123, abd456\)'
        ):
            resolve_session(store, "ab")
        with pytest.raises(SessionNotFoundError):
            resolve_session(store, "zz")


def test_looking_for_a_session_in_a_store_not_made_yet_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with pytest.raises(
        SessionNotFoundError, match=r'no session "abc" in .*sessions\.db \(no store there yet\)'
    ):
        open_store(None, looking_for="abc")
    assert not (tmp_path / "data").exists()
    with pytest.raises(SessionNotFoundError):
        open_store(tmp_path / "s.db", looking_for="abc")
    assert not (tmp_path / "s.db").exists()
