"""Fixtures for the session-log tests: a fresh store per test with a deterministic clock and ids."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.session import CountingIds, FixedClock, SessionStore

HARNESS = Path(__file__).resolve().parents[3] / "fixtures" / "harness"
HARNESS_LOGS = sorted(p for p in HARNESS.glob("*/*.jsonl"))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    with SessionStore(
        tmp_path / "sessions.db", clock=FixedClock(1_000, step=1), ids=CountingIds("s"), synchronous="NORMAL"
    ) as opened:
        yield opened


def snapshot_rows(store: SessionStore) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Every row of both tables, to show a refused operation changed nothing."""
    conn = store.connect()
    try:
        sessions = conn.execute("SELECT * FROM sessions ORDER BY id").fetchall()
        events = conn.execute("SELECT * FROM events ORDER BY session_id, seq").fetchall()
    finally:
        conn.close()
    return sessions, events
