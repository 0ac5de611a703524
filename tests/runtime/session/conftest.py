"""Fixtures for the session-log tests: a fresh store per test, on each backend (SQLite and PostgreSQL), with a
deterministic clock and ids; `sqlite_store` for the tests of SQLite's own file format."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.runtime.session import CountingIds, FixedClock, SessionStore, SessionStoreProtocol

from .backends import BACKENDS, Backend

HARNESS = Path(__file__).resolve().parents[3] / "fixtures" / "harness"
HARNESS_LOGS = sorted(p for p in HARNESS.glob("*/*.jsonl"))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", str(tmp_path / "sessions.db"))
    return Backend("postgresql", request.getfixturevalue("pg_url"))


@pytest.fixture
def store(backend: Backend) -> Iterator[SessionStoreProtocol]:
    with backend.open(clock=FixedClock(1_000, step=1), ids=CountingIds("s")) as opened:
        yield opened


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(
        tmp_path / "sessions.db", clock=FixedClock(1_000, step=1), ids=CountingIds("s"), synchronous="NORMAL"
    ) as opened:
        yield opened


def snapshot_rows(
    target: Backend | SessionStore,
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Every row of both tables, read by a plain client: what a refused operation must leave unchanged."""
    backend = target if isinstance(target, Backend) else Backend("sqlite", str(target.path))
    with backend.raw() as conn:
        sessions = conn.execute("SELECT * FROM sessions ORDER BY id")
        events = conn.execute("SELECT * FROM events ORDER BY session_id, seq")
    return sessions, events
