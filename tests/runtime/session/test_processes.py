"""Real processes, on each backend: a writer SIGKILLed mid-stream loses nothing it flushed and the next holder of
the lease repairs its open turn; four writers on four sessions share one store; a second writer of a session is
refused, naming the first."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from dsh.runtime.session import SessionInUseError, SessionStoreProtocol, StoredEvent, open_log, project

from .backends import Backend

ROOT = Path(__file__).resolve().parents[3]


def _writer(
    spec: str, session: str, count: int, flush_every: int, *, hold: bool = False
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.runtime.session.writer_process",
            spec,
            session,
            str(count),
            str(flush_every),
            *(["hold"] if hold else []),
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _repair_as_next_holder(store: SessionStoreProtocol, session: str) -> list[StoredEvent]:
    """Take the lease as soon as the killed writer's is released (the server notices the dropped connection at
    once, but not synchronously with the kill), letting `open_log` repair the open turn; returns what it added."""
    before = store.length(session)
    deadline = time.monotonic() + 10
    while True:
        try:
            async with open_log(store, session) as log:
                assert log.state.open_turn is None
            break
        except SessionInUseError:
            if time.monotonic() > deadline:
                raise
            await anyio.sleep(0.05)
    return list(store.events(session, start=before))


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_mid_stream_keeps_every_flushed_event_and_the_next_holder_repairs(backend: Backend) -> None:
    with backend.open() as store:
        session = store.create(cwd="/w").id
    durable = 0
    with _writer(backend.spec, session, 0, 25) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("durable"):
                durable = int(line.split()[1])
                if durable >= 600:
                    break
        os.kill(process.pid, signal.SIGKILL)
        _, err = process.communicate(timeout=10)
    assert process.returncode == -signal.SIGKILL
    assert durable >= 600, err

    with backend.open() as store:
        events = list(store.events(session))
        assert len(events) >= durable  # nothing flushed is lost
        assert [e.seq for e in events] == list(range(len(events)))
        for i, event in enumerate(events[3:]):
            assert json.loads(event.data)["chunk"]["text"] == f"{session}:{i}"
        appended = anyio.run(_repair_as_next_holder, store, session)
        assert [e.type for e in appended] == ["step/end", "turn/end", "session/end-seed"]
        assert json.loads(appended[1].data)["reason"] == {"kind": "interrupted"}
        assert [type(m.view()).__name__ for m in project(store.events(session)).messages] == ["UserMessage"]


def test_four_processes_append_to_four_sessions_of_one_store(backend: Backend) -> None:
    with backend.open() as store:
        sessions = [store.create().id for _ in range(4)]
    count = 400
    writers = [_writer(backend.spec, session, count, 7 + 5 * i) for i, session in enumerate(sessions)]
    for writer in writers:
        _, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
    with backend.open() as store:
        for session in sessions:
            events = list(store.events(session))
            assert [e.seq for e in events] == list(range(count + 3))
            texts = [json.loads(e.data)["chunk"]["text"] for e in events[3:]]
            assert texts == [f"{session}:{i}" for i in range(count)]


def test_two_processes_on_one_session_the_second_is_refused_naming_the_first(backend: Backend) -> None:
    with backend.open() as store:
        session = store.create().id
    count = 2_000
    with _writer(backend.spec, session, count, 10, hold=True) as first:
        assert first.stdout is not None
        assert first.stdout.readline().startswith("writing")  # the first holds the lease from here on
        second = _writer(backend.spec, session, count, 10)
        _, refused = second.communicate(timeout=60)  # started while the first writes its stream
        lines = [first.stdout.readline() for _ in range(count // 10 + 1)]
        assert lines[-1] == "holding\n", lines[-3:]
        _, err = first.communicate(input="", timeout=60)
    assert first.returncode == 0, err
    assert second.returncode != 0
    assert f"session {session} is in use by pid {first.pid} on {socket.gethostname()} since " in refused
    with backend.open() as store:
        events = list(store.events(session))
    assert [e.seq for e in events] == list(range(count + 3))  # none lost, none twice
    assert [json.loads(e.data)["chunk"]["text"] for e in events[3:]] == [
        f"{session}:{i}" for i in range(count)
    ]
