"""One writer per session across processes: a second process is refused while the first completes its turn with
contiguous seqs (through the API and through `dsh run`); a dead holder's lease is taken over and its open turn
repaired; an expired lease is taken over and its old holder's next write refused; a lease is given back on close."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from dsh.runtime.session import (
    Lease,
    LeaseLostError,
    SessionInUseError,
    SessionStore,
    StoredEvent,
    open_log,
    resume,
)
from tests.plugins.llm_openai.helpers import wire
from tests.plugins.llm_openai.loopback import Reply, data, loopback, sse
from tests.runtime.cli.helpers import DSH, deployment, plain_env
from tests.strategies import TurnSpec, turn_events

ROOT = Path(__file__).resolve().parents[3]


def _holder(db: Path, session: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.runtime.session.lease_holder", str(db), session],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "mid-turn", process.stderr.read() if process.stderr else ""
    return process


def _contiguous(events: list[StoredEvent]) -> None:
    assert [e.seq for e in events] == list(range(len(events)))


def _since(lease: Lease) -> str:
    return (
        datetime.fromtimestamp(lease.since / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


def test_a_second_writer_is_refused_while_the_first_completes_its_turn(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        session = store.create(cwd="/w").id
    with _holder(db, session) as process, SessionStore(db) as store:
        held = store.lease_holder(session)
        assert held is not None
        assert (held.pid, held.host) == (process.pid, socket.gethostname())
        before = list(store.events(session))

        async def second() -> None:
            async with open_log(store, session):
                raise AssertionError("a second writer got the log")

        with pytest.raises(SessionInUseError) as refused:
            anyio.run(second)
        error = refused.value
        assert (error.session_id, error.pid, error.host) == (session, process.pid, socket.gethostname())
        assert error.since == datetime.fromtimestamp(held.since / 1000, UTC)
        assert (
            str(error)
            == f"session {session} is in use by pid {process.pid} on {error.host} since {_since(held)}"
        )
        with pytest.raises(SessionInUseError):
            resume(store, session)  # repair runs only with the lease
        assert list(store.events(session)) == before, "the refused writer wrote nothing, not even a repair"

        out, err = process.communicate("go\n", timeout=30)
        assert process.returncode == 0, err
        assert out.strip() == "done"
        events = list(store.events(session))
        _contiguous(events)
        assert events[-1].type == "turn/end"
        assert json.loads(events[-1].data)["reason"] == {"kind": "completed"}
        assert not [e for e in events if "interrupted" in e.data]
        assert store.lease_holder(session) is None, "closing the log gave the lease back"


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_a_dead_holders_lease_is_taken_over_and_its_turn_repaired(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        session = store.create(cwd="/w").id
    with _holder(db, session) as process:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    with SessionStore(db) as store:
        stale = store.lease_holder(session)
        assert stale is not None
        assert stale.pid == process.pid, "SIGKILL left the lease behind"

        async def take_over() -> None:
            async with open_log(store, session) as log:
                mine = store.lease_holder(session)
                assert mine is not None
                assert mine.pid == os.getpid()
                assert log.state.open_turn is None

        anyio.run(take_over)
        events = list(store.events(session))
        _contiguous(events)
        assert [e.type for e in events[-2:]] == ["turn/end", "session/end-seed"]
        assert json.loads(events[-2].data)["reason"] == {"kind": "interrupted"}
        assert store.lease_holder(session) is None


class _Wall:
    """A wall clock the test moves (ms)."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def _store(db: Path, wall: Callable[[], int]) -> SessionStore:
    return SessionStore(db, lease_ttl_ms=1_000, wall_ms=wall)


def test_an_expired_lease_is_taken_over_and_its_old_holder_refused(tmp_path: Path) -> None:
    wall = _Wall()
    with _store(tmp_path / "s.db", wall) as first, _store(tmp_path / "s.db", wall) as second:
        session = first.create().id
        lease = first.acquire_lease(session)
        wall.now += 999
        with pytest.raises(SessionInUseError):
            second.acquire_lease(session)  # our own pid, alive: held until it expires
        first.renew_lease(lease)
        wall.now += 999
        with pytest.raises(SessionInUseError):
            second.acquire_lease(session)
        wall.now += 1
        taken = second.acquire_lease(session)
        with pytest.raises(SessionInUseError) as refused:
            first.renew_lease(lease)
        assert refused.value.since == datetime.fromtimestamp(taken.since / 1000, UTC)
        first.release_lease(lease)  # giving back a lease that was taken over leaves the new holder's alone
        assert second.lease_holder(session) == taken
        second.release_lease(taken)
        with pytest.raises(LeaseLostError, match="expired while it was stalled"):
            first.renew_lease(lease)


def test_a_log_whose_lease_was_taken_over_refuses_its_next_commit(tmp_path: Path) -> None:
    wall = _Wall()
    with _store(tmp_path / "s.db", wall) as first, _store(tmp_path / "s.db", wall) as second:
        session = first.create().id
        events = turn_events(1, 0, TurnSpec("go", ("a",), ()))

        async def stalled() -> None:
            async with open_log(first, session, repair=False) as log:
                log.append(events[0])
                await log.flush()
                wall.now += 5_000  # this process stalls past its lease (SIGSTOP, a suspended laptop)
                second.acquire_lease(session)
                log.append(events[1])
                await log.flush()

        with pytest.raises(SessionInUseError):
            anyio.run(stalled)
        assert [e.seq for e in first.events(session)] == [0], "nothing was written after the takeover"


def _slow_answer(pause: float) -> Reply:
    """A model reply that streams a first delta, pauses `pause` seconds mid-turn, then finishes."""
    return Reply(
        parts=[data(wire(content="first ")), pause, sse(wire(content="second"), wire(finish="stop"))]
    )


@pytest.mark.anyio
async def test_dsh_run_on_a_session_another_run_is_writing_is_one_error_line(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        session = store.create(cwd=str(tmp_path)).id
    async with loopback(_slow_answer(6.0)) as server:
        config = tmp_path / "deployment.yml"
        config.write_text(deployment(server.base_url))
        command = [*DSH, "run", "--config", str(config), "--store", str(db), "--session", session]
        async with await anyio.open_process([*command, "first"], env=plain_env()) as first:
            with anyio.fail_after(30):
                while not server.requests:  # noqa: ASYNC110  # the server records requests; it signals nothing
                    await anyio.sleep(0.05)
            second = await anyio.run_process([*command, "second"], env=plain_env(), check=False)
            assert second.returncode == 2, second.stderr.decode()
            lines = second.stderr.decode().strip().splitlines()
            assert len(lines) == 1
            assert lines[0].startswith(f"error: session {session} is in use by pid {first.pid} on ")
            assert len(server.requests) == 1, "the refused run never reached the model"
            with anyio.fail_after(30):
                assert await first.wait() == 0
    with SessionStore(db) as store:
        events = list(store.events(session))
    _contiguous(events)
    assert events[-1].type == "turn/end"
    assert json.loads(events[-1].data)["reason"] == {"kind": "completed"}
    assert not [e for e in events if "interrupted" in e.data]
