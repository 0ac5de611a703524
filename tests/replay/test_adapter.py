"""The replay adapter: serves recorded calls by session and key without reading the request, binds nested agents
by `spawned_by` (or first-call order), reports every mismatch, plays overrides (throw, hang), paces, and serves any
derived script back chunk for chunk."""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.replay import (
    Recording,
    RecordingEnded,
    ReplayAdapter,
    ReplayMismatch,
    derive_script,
    load_recording,
    read_log,
)
from dsh.runtime.llm import (
    AssistantBlock,
    BlockEnd,
    BlockStart,
    CallKey,
    FailureCode,
    Finish,
    FinishError,
    LlmAdapter,
    LlmFailure,
    LlmRequest,
    LlmRuntime,
    StreamChunk,
    TextBlock,
    TextDelta,
    encode_chunk,
)
from dsh.runtime.session import SessionId, SessionInfo, SessionStore, SpawnedBy
from tests.strategies import valid_calls

from .logs import HARNESS, PROVIDER, LogBuilder, text_call

pytestmark = pytest.mark.anyio

CANCEL = HARNESS / "cancel" / "session.jsonl"


def request(
    session_id: str | None, turn: int, step: int, attempt: int = 1, purpose: str = "step", **extra: Any
) -> LlmRequest:
    call = CallKey(turn=turn, step=step, attempt=attempt, purpose=purpose)
    extra.setdefault("messages", ())
    return LlmRequest(provider=PROVIDER, model="m", session_id=session_id, call=call, **extra)


async def drain(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    async with aclosing(stream) as chunks:  # type: ignore[type-var]  # adapters return async generators
        return [chunk async for chunk in chunks]


async def served(
    adapter: LlmAdapter, session_id: str | None, turn: int, step: int, attempt: int = 1, purpose: str = "step"
) -> list[StreamChunk]:
    """The call as the loop receives it: through `LlmRuntime`."""
    llm = LlmRuntime()
    llm.register(PROVIDER, adapter)
    return await drain(llm.stream(request(session_id, turn, step, attempt, purpose)))


class Sessions:
    """A lookup callable over hand-made `SessionInfo`s."""

    def __init__(self) -> None:
        self.infos: dict[str, SessionInfo] = {}

    def add(
        self, id: str, parent: str | None = None, spawned_by: SpawnedBy | None = None, cwd: str | None = None
    ) -> str:
        self.infos[id] = SessionInfo(
            id=SessionId(id), created_at=0, parent_id=parent, spawned_by=spawned_by, cwd=cwd
        )
        return id

    def __call__(self, session_id: str) -> SessionInfo:
        return self.infos[session_id]


def recording_of(path: Path, override: dict[str, Any] | None = None) -> Recording:
    if override is None:
        return load_recording(path)
    file = path.parent.parent / f"{path.parent.name}.override.json"
    file.write_text(json.dumps({"overrides": [override]}))
    return load_recording(path, override=file)


async def test_each_call_is_served_its_recorded_chunks_and_the_run_is_consumed() -> None:
    recording = load_recording(HARNESS / "compaction-recovery")
    sessions = Sessions()
    root = sessions.add("live-root")
    adapter = ReplayAdapter(recording, sessions=sessions)
    entries = recording.root.entries
    assert await served(adapter, root, 1, 1) == list(entries[0].chunks)
    assert await served(adapter, root, 1, 2) == list(entries[1].chunks)
    assert await served(adapter, root, 1, 2, 1, "compaction") == list(entries[2].chunks)
    assert await served(adapter, root, 1, 2, 2) == list(entries[3].chunks)  # the retry after it
    adapter.assert_consumed()
    assert adapter.bindings() == {root: recording.root.log.name}


class Boom:
    """Raises on any use: a request field the adapter must never read."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the replay adapter read the request ({name})")

    def __iter__(self) -> Any:
        raise AssertionError("the replay adapter iterated the request's messages")

    def __len__(self) -> int:
        raise AssertionError("the replay adapter measured the request")

    def __bool__(self) -> bool:
        raise AssertionError("the replay adapter tested the request")


async def test_the_request_is_never_read() -> None:
    adapter = ReplayAdapter(load_recording(HARNESS / "text-turn"), sessions=Sessions())
    boom: Any = Boom()
    chunks = await drain(adapter.stream(request(None, 1, 1, messages=boom, system=boom, tools=boom)))
    assert isinstance(chunks[-1], Finish)


async def test_a_call_without_a_session_is_one_anonymous_session_and_without_a_key_is_served_in_order() -> (
    None
):
    recording = load_recording(HARNESS / "multi-turn")
    adapter = ReplayAdapter(recording, sessions=Sessions())
    keyless = LlmRequest(provider=PROVIDER, model="m", messages=())
    first = await drain(adapter.stream(keyless))
    second = await drain(adapter.stream(keyless))
    assert [first, second] == [list(e.chunks) for e in recording.root.entries]
    adapter.assert_consumed()


async def test_a_call_with_no_entry_is_a_mismatch_naming_key_recorded_and_asked() -> None:
    adapter = ReplayAdapter(load_recording(HARNESS / "text-turn"), sessions=Sessions())
    with pytest.raises(ReplayMismatch) as caught:
        await drain(adapter.stream(request(None, 1, 3)))
    error = caught.value
    assert error.call == CallKey(turn=1, step=3)
    assert error.log is not None
    assert error.log.endswith("text-turn/session.jsonl")
    assert "nothing is recorded at (1,3,1)" in error.recorded
    assert "the next unserved entry is (1,1,1) model, 28 chunks, finish stop" in error.recorded
    assert "call (1,3,1)" in error.asked
    assert "'deepseek-official'" in error.asked
    with pytest.raises(ReplayMismatch) as again:
        adapter.assert_consumed()
    assert again.value is error  # kept: the loop would only have seen an error finish


async def test_a_call_served_twice_is_a_mismatch_saying_it_was_served() -> None:
    adapter = ReplayAdapter(load_recording(HARNESS / "text-turn"), sessions=Sessions())
    await drain(adapter.stream(request(None, 1, 1)))
    with pytest.raises(
        ReplayMismatch,
        match=r"\(1,1,1\) model, 28 chunks, finish stop .*\(already served\); every entry has been served",
    ):
        await drain(adapter.stream(request(None, 1, 1)))


async def test_through_the_runtime_a_mismatch_is_an_error_finish_and_assert_consumed_raises_it() -> None:
    adapter = ReplayAdapter(load_recording(HARNESS / "text-turn"), sessions=Sessions())
    (finish,) = await served(adapter, None, 1, 2)
    assert isinstance(finish, Finish)
    assert isinstance(finish.reason, FinishError)
    assert "replay mismatch" in finish.reason.failure.message
    with pytest.raises(ReplayMismatch, match=r"\(1,2,1\)"):
        adapter.assert_consumed()


async def test_a_turn_past_the_recording_fails_in_one_line_and_is_still_a_mismatch() -> None:
    adapter = ReplayAdapter(load_recording(HARNESS / "text-turn"), sessions=Sessions())
    (finish,) = await served(adapter, None, 2, 1)
    assert isinstance(finish, Finish)
    assert isinstance(finish.reason, FinishError)
    failure = finish.reason.failure
    assert failure.code == "REPLAY_ENDED"
    assert failure.message.startswith("the recording has no turn 2 (")
    assert failure.message.endswith("holds 1 turn); a replay goes only as far as its recording")
    with pytest.raises(RecordingEnded, match=r"\(2,1,1\)"):
        adapter.assert_consumed()


async def test_a_session_with_no_recorded_log_is_a_mismatch() -> None:
    sessions = Sessions()
    adapter = ReplayAdapter(load_recording(HARNESS / "text-turn"), sessions=sessions)
    await drain(adapter.stream(request(sessions.add("first"), 1, 1)))
    with pytest.raises(ReplayMismatch) as caught:
        await drain(adapter.stream(request(sessions.add("second"), 1, 1)))
    assert caught.value.session_id == "second"
    assert caught.value.log is None
    assert "has no recorded log" in str(caught.value)
    assert "already bound to live session 'first'" in str(caught.value)
    child = sessions.add("child", parent="first")
    with pytest.raises(ReplayMismatch, match=r"every child log of .* is already bound"):
        await drain(adapter.stream(request(child, 2, 1)))
    orphan = sessions.add("orphan", parent="silent")
    with pytest.raises(ReplayMismatch, match="its parent 'silent' has made no call"):
        await drain(adapter.stream(request(orphan, 1, 1)))


async def test_assert_consumed_names_unserved_entries_and_unbound_logs() -> None:
    sessions = Sessions()
    adapter = ReplayAdapter(load_recording(HARNESS / "subagent-fork-in-process"), sessions=sessions)
    await drain(adapter.stream(request(sessions.add("root"), 1, 1)))
    with pytest.raises(ReplayMismatch) as caught:
        adapter.assert_consumed()
    error = caught.value
    assert error.call == CallKey(turn=2, step=1)
    assert error.session_id == "root"
    assert error.asked == "(1,1,1)"
    text = str(error)
    assert 'session.jsonl (live session "root") consumed 1/3; never served: (2,1,1) model' in text
    assert "session.1.jsonl (no live session (never bound)) consumed 0/1" in text


async def test_the_fork_fixture_binds_its_child_by_first_call_order() -> None:
    recording = load_recording(HARNESS / "subagent-fork-in-process")
    sessions = Sessions()
    root, child = sessions.add("root"), sessions.add("fork", parent="root")
    adapter = ReplayAdapter(recording, sessions=sessions)
    await served(adapter, root, 1, 1)
    await served(adapter, root, 2, 1)
    said = await served(adapter, child, 2, 1)
    assert BlockEnd(index=1, block=TextBlock("MARMALADE")) in said
    await served(adapter, root, 2, 2)
    adapter.assert_consumed()
    assert adapter.bindings() == {root: recording.root.log.name, child: recording.children[0].log.name}


def _family(tmp_path: Path, *, recorded_spawned_by: bool) -> Recording:
    spawn = text_call("spawn both")
    LogBuilder("rec-root").turn(1, [spawn]).write(tmp_path / "session.jsonl")
    for number, call_id in enumerate(("call_a", "call_b"), 1):
        by = SpawnedBy(turn=1, step=1, call_id=call_id) if recorded_spawned_by else None
        child = LogBuilder(f"rec-{call_id}", created_at=number, parent="rec-root", spawned_by=by)
        child.turn(1, [text_call(f"I am {call_id}")]).write(tmp_path / f"session.{number}.jsonl")
    return load_recording(tmp_path)


async def _child_call(
    adapter: ReplayAdapter, heard: dict[str, list[StreamChunk]], call_id: str, session_id: str, delay: float
) -> None:
    await anyio.sleep(delay)
    heard[call_id] = await served(adapter, session_id, 1, 1)


async def test_concurrent_children_bind_by_spawned_by_every_time(tmp_path: Path) -> None:
    recording = _family(tmp_path, recorded_spawned_by=True)
    rng = random.Random(1234)
    with SessionStore(tmp_path / "live.db") as store:
        for _ in range(50):
            root = store.create()
            children = {
                call_id: store.create(
                    parent_id=root.id, spawned_by=SpawnedBy(turn=1, step=1, call_id=call_id)
                ).id
                for call_id in ("call_a", "call_b")
            }
            adapter = ReplayAdapter(recording, sessions=store)
            await served(adapter, root.id, 1, 1)
            heard: dict[str, list[StreamChunk]] = {}
            order = list(children.items())
            rng.shuffle(order)
            async with anyio.create_task_group() as group:
                for call_id, session_id in order:
                    group.start_soon(_child_call, adapter, heard, call_id, session_id, rng.random() / 1000)
            for call_id in children:
                assert heard[call_id][1] == TextDelta(index=0, text=f"I am {call_id}")
            adapter.assert_consumed()


async def test_without_recorded_spawned_by_children_bind_in_first_call_order(tmp_path: Path) -> None:
    recording = _family(tmp_path, recorded_spawned_by=False)
    sessions = Sessions()
    root = sessions.add("root")
    late = sessions.add("late", parent=root, spawned_by=SpawnedBy(turn=1, step=1, call_id="call_a"))
    early = sessions.add("early", parent=root, spawned_by=SpawnedBy(turn=1, step=1, call_id="call_b"))
    adapter = ReplayAdapter(recording, sessions=sessions)
    await served(adapter, root, 1, 1)
    assert (await served(adapter, early, 1, 1))[1] == TextDelta(index=0, text="I am call_a")
    assert (await served(adapter, late, 1, 1))[1] == TextDelta(index=0, text="I am call_b")


async def test_a_child_spawned_by_an_unrecorded_call_is_a_mismatch(tmp_path: Path) -> None:
    recording = _family(tmp_path, recorded_spawned_by=True)
    sessions = Sessions()
    root = sessions.add("root")
    stray = sessions.add("stray", parent=root, spawned_by=SpawnedBy(turn=1, step=1, call_id="call_z"))
    adapter = ReplayAdapter(recording, sessions=sessions)
    await served(adapter, root, 1, 1)
    with pytest.raises(ReplayMismatch, match=r"no unbound child log of .* was spawned by \(1,1,call_z\)"):
        await drain(adapter.stream(request(stray, 1, 1)))


async def test_a_throw_serves_its_prefix_then_fails_like_a_live_adapter(tmp_path: Path) -> None:
    prefix: list[StreamChunk] = [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="par")]
    override = {
        "op": "throw",
        "turn": 1,
        "step": 1,
        "code": "AUTH",
        "message": "simulated 401",
        "chunks": [json.loads(encode_chunk(c)) for c in prefix],
    }
    recording = recording_of(_copy(tmp_path, "error-finish"), override)
    with pytest.raises(Exception, match=r"simulated 401 \[AUTH\]"):
        await drain(ReplayAdapter(recording, sessions=Sessions()).stream(request(None, 1, 1)))
    chunks = await served(ReplayAdapter(recording, sessions=Sessions()), None, 1, 1)
    failure = LlmFailure(message="simulated 401", code=FailureCode.AUTH)
    assert chunks == [*prefix, BlockEnd(index=0, block=TextBlock("par")), Finish(reason=FinishError(failure))]


async def test_the_originals_throw_override_replays_like_the_recorded_error_finish(tmp_path: Path) -> None:
    path = _copy(tmp_path, "error-finish")
    override = {
        "op": "throw",
        "turn": 1,
        "step": 1,
        "code": "AUTH",
        "message": "simulated provider error (HTTP 401)",
        "chunks": [],
    }
    thrown = await served(ReplayAdapter(recording_of(path, override), sessions=Sessions()), None, 1, 1)
    recorded = await served(ReplayAdapter(load_recording(path), sessions=Sessions()), None, 1, 1)
    assert thrown == recorded


def _copy(tmp_path: Path, scenario: str) -> Path:
    folder = tmp_path / scenario
    folder.mkdir()
    target = folder / "session.jsonl"
    target.write_bytes((HARNESS / scenario / "session.jsonl").read_bytes())
    return target


async def test_a_hang_serves_its_prefix_touches_the_ready_file_in_the_sessions_cwd_and_waits(
    tmp_path: Path,
) -> None:
    recording = recording_of(
        _copy(tmp_path, "cancel"), {"op": "hang", "turn": 1, "step": 1, "readyFile": "run/.ready"}
    )
    sessions = Sessions()
    live = sessions.add("live", cwd=str(tmp_path / "work"))
    adapter = ReplayAdapter(recording, sessions=sessions)
    llm = LlmRuntime()
    llm.register(PROVIDER, adapter)
    got: list[StreamChunk] = []
    ready = tmp_path / "work" / "run" / ".ready"
    async with anyio.create_task_group() as group:

        async def call() -> None:
            async with aclosing(llm.stream(request(live, 1, 1))) as chunks:
                async for chunk in chunks:
                    got.append(chunk)

        group.start_soon(call)
        with anyio.fail_after(5):
            while not ready.exists():  # noqa: ASYNC110  # a driver polls for the file, as the original's does
                await anyio.sleep(0.005)
        await anyio.sleep(0.02)
        assert got == [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="partial")]
        group.cancel_scope.cancel()
    assert len(got) == 2  # cancellation yields nothing more
    adapter.assert_consumed()


async def test_pace_delays_each_chunk_and_is_cancellable() -> None:
    recording = load_recording(HARNESS / "error-finish")
    started = anyio.current_time()
    await drain(ReplayAdapter(recording, sessions=Sessions(), pace_ms=40).stream(request(None, 1, 1)))
    assert anyio.current_time() - started >= 0.035
    slow = ReplayAdapter(recording, sessions=Sessions(), pace_ms=60_000)
    got: list[StreamChunk] = []
    started = anyio.current_time()
    with anyio.move_on_after(0.05):
        async with aclosing(slow.stream(request(None, 1, 1))) as chunks:  # type: ignore[type-var]  # an async generator
            async for chunk in chunks:
                got.append(chunk)
    assert got == []
    assert anyio.current_time() - started < 5
    with pytest.raises(ValueError, match="pace_ms must be >= 0"):
        ReplayAdapter(recording, sessions=Sessions(), pace_ms=-1)


# -- the property: what is derived is served back exactly ---------------------------------------------------------

Call = tuple[tuple[AssistantBlock, ...], list[StreamChunk]]
scripts = st.lists(  # turns, of steps, of attempts
    st.lists(st.lists(valid_calls(), min_size=1, max_size=3), min_size=1, max_size=3), min_size=1, max_size=3
)


@given(turns=scripts, pack=st.booleans())
def test_any_derived_script_is_served_back_chunk_for_chunk(turns: list[list[list[Call]]], pack: bool) -> None:
    log = LogBuilder()
    recorded: list[tuple[CallKey, list[StreamChunk]]] = []
    for turn, steps in enumerate(turns, 1):
        log.turn(turn, *[[chunks for _, chunks in attempts] for attempts in steps])
        for step, attempts in enumerate(steps, 1):
            recorded += [
                (CallKey(turn=turn, step=step, attempt=attempt), chunks)
                for attempt, (_, chunks) in enumerate(attempts, 1)
            ]
    with tempfile.TemporaryDirectory() as folder:
        path = log.write(Path(folder) / "session.jsonl", pack=pack)
        script = derive_script(read_log(path))
    assert [(e.call, list(e.chunks)) for e in script.entries] == recorded
    adapter = ReplayAdapter(Recording(script), sessions=Sessions())

    async def replay_all() -> list[list[StreamChunk]]:
        return [await served(adapter, None, k.turn, k.step, k.attempt) for k, _ in recorded]

    assert anyio.run(replay_all) == [chunks for _, chunks in recorded]
    adapter.assert_consumed()


def test_the_adapter_states_the_window_the_recording_logged_for_a_route() -> None:
    recording = load_recording(HARNESS / "compaction-recovery")
    adapter = ReplayAdapter(recording, sessions=Sessions())
    llm = LlmRuntime()
    llm.register(PROVIDER, adapter)
    assert llm.context_window(PROVIDER, "deepseek-v4-flash") == 128_000
    assert llm.context_window(PROVIDER, "another-model") is None
    # a recording whose request/context states no window (the original's usual record) answers None
    assert (
        ReplayAdapter(load_recording(HARNESS / "text-turn"), sessions=Sessions()).context_window(
            PROVIDER, "deepseek-v4-flash"
        )
        is None
    )


def test_the_last_recorded_context_of_a_route_wins(tmp_path: Path) -> None:
    log = LogBuilder().turn(1, [text_call("a")])
    log.add("request/context", {"provider": PROVIDER, "model": "m", "contextWindow": 64_000})
    log.add("request/context", {"provider": PROVIDER, "model": "m", "contextWindow": 32_000})
    recording = load_recording(log.write(tmp_path / "s.jsonl"))
    assert recording.context_window(PROVIDER, "m") == 32_000
