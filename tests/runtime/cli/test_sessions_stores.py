"""`dsh sessions copy` and `tail`, and `--store`/`$DSH_STORE` naming a PostgreSQL URL, as a user runs them: a copy
SQLite -> PostgreSQL -> SQLite exports every shared fixture byte-equal and keeps ids and fork links; a tail prints
what another writer appends until the turn ends; a URL's password is never printed."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from typer.testing import CliRunner

from dsh.runtime.cli.app import app
from dsh.runtime.session import (
    CountingIds,
    FixedClock,
    SessionStore,
    SessionStoreProtocol,
    SpawnedBy,
    StoredEvent,
    export_jsonl,
    import_jsonl,
    open_log,
    open_store,
)
from tests.pg_server import PgServer
from tests.strategies import TurnSpec, turn_events

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = sorted((ROOT / "fixtures" / "harness").glob("*/session.jsonl"))
runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False, env=env)
    assert result.exit_code == 0, result.output
    return result.output


def _exports(store: SessionStoreProtocol) -> dict[str, bytes]:
    exported: dict[str, bytes] = {}
    for info in store.sessions():
        out = io.BytesIO()
        export_jsonl(store, info.id, out)
        exported[info.id] = out.getvalue()
    return exported


def test_copy_sqlite_to_postgresql_and_back_keeps_every_fixture_byte_equal(
    tmp_path: Path, pg_url: str
) -> None:
    assert len(FIXTURES) >= 10
    first, last = tmp_path / "first.db", tmp_path / "last.db"
    with SessionStore(first, clock=FixedClock(5_000, step=1), ids=CountingIds("c")) as store:
        imported = [import_jsonl(store, path).id for path in FIXTURES]
        # a fork by reference with events of its own, a fork of that fork, and a spawned child
        child = store.fork(imported[0])
        store.append_events(
            child.id, [StoredEvent(type="plugin/note", seq=child.seed_length or 0, time=9, data='{"n":1}')]
        )
        store.fork(child.id)
        store.create(
            parent_id=imported[1], delegation_depth=1, spawned_by=SpawnedBy(turn=1, step=1, call_id="c1")
        )
        sessions = store.sessions()
        original = _exports(store)
    copied = json.loads(run("sessions", "copy", str(first), pg_url, "--json"))
    assert copied["sessions"] == [info.id for info in sessions]
    run("sessions", "copy", pg_url, str(last))
    with open_store(pg_url) as pg, SessionStore(last) as back:
        assert pg.sessions() == sessions == back.sessions()  # ids, parents, seeds, spawned_by, imported_from
        assert _exports(pg) == original == _exports(back)
        for path, session in zip(
            FIXTURES, imported, strict=True
        ):  # and the exports hold the fixtures' events
            lines = [json.loads(line) for line in path.read_bytes().splitlines()[1:]]
            assert [json.loads(line) for line in original[session].splitlines()[1:]] == lines, path
        assert pg.length(child.id) == (child.seed_length or 0) + 1
    with pytest.raises(Exception, match="already exists"):
        runner.invoke(app, ["sessions", "copy", str(first), pg_url], catch_exceptions=False)


def test_copy_of_one_fork_brings_its_parent(tmp_path: Path, pg_url: str) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        parent = import_jsonl(store, FIXTURES[0])
        child = store.fork(parent.id)
        store.create()  # not asked for, not copied
    run("sessions", "copy", str(db), pg_url, "--session", child.id)
    with open_store(pg_url) as pg:
        assert [info.id for info in pg.sessions()] == [parent.id, child.id]
        assert pg.length(child.id) == child.seed_length


def test_store_urls_come_from_dollar_dsh_store_and_their_password_is_never_printed(
    tmp_path: Path, pg_server: PgServer
) -> None:
    url = pg_server.new_schema().replace(
        "dsh@", "dsh:hunter2@"
    )  # trust auth: the password is sent, not checked
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        session = import_jsonl(store, FIXTURES[0]).id
    out = run("sessions", "copy", str(db), url)
    assert "hunter2" not in out
    assert "dsh@127.0.0.1" in out
    listed = json.loads(run("sessions", "list", "--json", env={"DSH_STORE": url}))
    assert [row["id"] for row in listed] == [session]
    missing = runner.invoke(app, ["sessions", "show", "nope", "--store", url])
    assert missing.exit_code != 0
    shown = f"{missing.output}{missing.exception!r}"
    assert "hunter2" not in shown
    assert "no session" in shown
    bad = subprocess.run(
        [sys.executable, "-c", "from dsh.runtime.cli import main; main()", "sessions", "list", "--store",
         f"postgresql://dsh:hunter2@127.0.0.1:{pg_server.port}/no_such_db"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert bad.returncode != 0
    assert "hunter2" not in bad.stdout + bad.stderr
    assert "cannot open the session store postgresql://dsh@127.0.0.1" in bad.stderr


def _tail_backends() -> list[str]:
    return ["sqlite", "postgresql"]


@pytest.mark.parametrize("kind", _tail_backends())
def test_tail_prints_what_another_writer_appends_until_the_turn_ends(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    spec = str(tmp_path / "s.db") if kind == "sqlite" else request.getfixturevalue("pg_url")
    events = turn_events(1, 0, TurnSpec("go", tuple(f"c{i}" for i in range(20)), ()))
    with open_store(spec) as store:
        session = store.create().id
        started, following = threading.Event(), threading.Event()

        async def write() -> None:
            async with open_log(store, session, repair=False) as log:
                for event in events[
                    :3
                ]:  # the turn is open before the tail starts: it begins at its turn/start
                    log.append(event)
                await log.flush()
                started.set()
                await anyio.to_thread.run_sync(following.wait, 30)
                for event in events[3:]:
                    log.append(event)
                    await log.flush()
                    await anyio.sleep(0.01)

        writer = threading.Thread(target=anyio.run, args=(write,))
        writer.start()
        assert started.wait(10)
        with subprocess.Popen(
            [sys.executable, "-c", "from dsh.runtime.cli import main; main()", "sessions", "tail", session, "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "DSH_STORE": spec},
        ) as tail:  # fmt: skip
            assert tail.stdout is not None
            lines = [tail.stdout.readline() for _ in range(3)]  # what was there when it started
            following.set()  # the rest is appended while it follows
            out, err = tail.communicate(timeout=60)
        writer.join()
        stored = list(store.events(session))
    assert tail.returncode == 0, err
    printed = [json.loads(line) for line in [*lines, *out.splitlines()]]
    assert [line["seq"] for line in printed] == [e.seq for e in stored]
    assert [line["type"] for line in printed] == [e.type for e in stored]
    assert printed[-1]["type"] == "turn/end"


def test_tail_of_a_closed_session_waits_for_the_next_turn(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        session = store.create().id
        first = turn_events(1, 0, TurnSpec("a", ("x",), ()))
        store.append_events(session, [StoredEvent.from_event(e, seq=i, time=1) for i, e in enumerate(first)])
        second = turn_events(2, len(first), TurnSpec("b", ("y",), ()))

        def later() -> None:
            time.sleep(0.5)
            store.append_events(
                session, [StoredEvent.from_event(e, seq=len(first) + i, time=2) for i, e in enumerate(second)]
            )

        threading.Thread(target=later).start()
        out = run("sessions", "tail", session, "--json", "--store", str(tmp_path / "s.db"))
    assert [json.loads(line)["seq"] for line in out.splitlines()] == list(
        range(len(first), len(first) + len(second))
    )


def test_tail_from_a_seq_prints_the_turn_readably_and_stops_at_its_end(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        session = store.create().id
        turns = [
            *turn_events(1, 0, TurnSpec("first", ("x",), ())),
            *turn_events(2, 0, TurnSpec("second", (), ())),
        ]
        store.append_events(session, [StoredEvent.from_event(e, seq=i, time=1) for i, e in enumerate(turns)])
    out = run("sessions", "tail", session, "--from", "0", "--store", str(db))
    assert "turn 1" in out
    assert "first" in out
    assert "turn 1 ended: completed" in out
    assert "second" not in out  # it stopped at the first turn's end
