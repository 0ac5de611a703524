"""Real processes: a writer SIGKILLed mid-stream loses nothing it flushed, and four writers share one file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.session import SessionStore, project, resume

ROOT = Path(__file__).resolve().parents[3]


def _writer(db: Path, session: str, count: int, flush_every: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.runtime.session.writer_process",
            str(db),
            session,
            str(count),
            str(flush_every),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_mid_stream_keeps_every_flushed_event_and_repair_closes_the_turn(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        session = store.create(cwd="/w").id
    durable = 0
    with _writer(db, session, 0, 25) as process:
        assert process.stdout is not None
        for line in process.stdout:
            durable = int(line.split()[1])
            if durable >= 600:
                break
        os.kill(process.pid, signal.SIGKILL)
        _, err = process.communicate(timeout=10)
    assert process.returncode == -signal.SIGKILL
    assert durable >= 600, err

    with SessionStore(db) as store:
        events = list(store.events(session))
        assert len(events) >= durable  # nothing flushed is lost
        assert [e.seq for e in events] == list(range(len(events)))
        for i, event in enumerate(events[3:]):
            assert json.loads(event.data)["chunk"]["text"] == f"{session}:{i}"
        _, appended = resume(store, session)
        assert [e.type for e in appended] == ["step/end", "turn/end", "session/end-seed"]
        assert json.loads(appended[1].data)["reason"] == {"kind": "interrupted"}
        assert [type(m.view()).__name__ for m in project(store.events(session)).messages] == ["UserMessage"]


def test_four_processes_append_to_different_sessions_of_one_file(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        sessions = [store.create().id for _ in range(4)]
    count = 400
    writers = [_writer(db, session, count, 7 + 5 * i) for i, session in enumerate(sessions)]
    for writer in writers:
        _, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
    with SessionStore(db) as store:
        for session in sessions:
            events = list(store.events(session))
            assert [e.seq for e in events] == list(range(count + 3))
            texts = [json.loads(e.data)["chunk"]["text"] for e in events[3:]]
            assert texts == [f"{session}:{i}" for i in range(count)]
