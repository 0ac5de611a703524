"""Deriving replay scripts: every recorded log of fixtures/harness, keys and attempts, compaction entries, fork
slicing, strict chunks, unfinished streams, stored sessions, and the recorded user inputs per turn."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from dsh.replay import (
    ScriptError,
    derive_entries,
    derive_script,
    load_recording,
    read_log,
    recorded_turns,
    stored_log,
)
from dsh.runtime.llm import (
    BlockEnd,
    BlockStart,
    CallKey,
    FailureCode,
    Finish,
    FinishError,
    FinishStop,
    LlmFailure,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
)
from dsh.runtime.session import SessionStore, SpawnedBy, import_jsonl

from .logs import HARNESS, PROVIDER, LogBuilder, text_call

# (turn, step, attempt, kind, finish) of every entry, per recorded log.
EXPECTED: dict[str, list[tuple[int, int, int, str, str]]] = {
    "agent-instructions/session.jsonl": [
        (1, 1, 1, "model", "tool-calls"),
        (1, 2, 1, "model", "tool-calls"),
        (1, 3, 1, "model", "stop"),
    ],
    "approval-composer/session.jsonl": [
        (1, 1, 1, "model", "tool-calls"),
        (1, 2, 1, "model", "tool-calls"),
        (1, 3, 1, "model", "tool-calls"),
        (1, 4, 1, "model", "stop"),
    ],
    "escalation-approved/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "hook-cc-posttool-context/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "hook-cc-pretool-ask/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "hook-cc-pretool-deny/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "hook-codex-pretool-block/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "hook-codex-stop-continue/session.jsonl": [(1, 1, 1, "model", "stop"), (1, 2, 1, "model", "stop")],
    "bash-tool-turn/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "compaction-recovery/session.jsonl": [
        (1, 1, 1, "model", "tool-calls"),
        (1, 2, 1, "model", "error"),
        (1, 2, 1, "compaction", "stop"),
        (1, 2, 2, "model", "stop"),
    ],
    "empty-response-retry/session.jsonl": [(1, 1, 1, "model", "error"), (1, 1, 2, "model", "stop")],
    "error-finish/session.jsonl": [(1, 1, 1, "model", "error")],
    "inline-image-prompt/session.jsonl": [(1, 1, 1, "model", "stop")],
    "max-tokens-continue/session.jsonl": [(1, 1, 1, "model", "max-tokens"), (2, 1, 1, "model", "stop")],
    "multi-turn/session.jsonl": [(1, 1, 1, "model", "stop"), (2, 1, 1, "model", "stop")],
    "packed-chunks/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "parallel-tool-calls/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "subagent-fork-in-process/session.jsonl": [
        (1, 1, 1, "model", "stop"),
        (2, 1, 1, "model", "tool-calls"),
        (2, 2, 1, "model", "stop"),
    ],
    "subagent-fork-in-process/session.1.jsonl": [(2, 1, 1, "model", "stop")],
    "subagent-report/session.jsonl": [
        (1, 1, 1, "model", "tool-calls"),
        (1, 2, 1, "model", "stop"),
        (2, 1, 1, "model", "stop"),
        (3, 1, 1, "model", "stop"),
    ],
    "subagent-report/session.1.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "text-turn/session.jsonl": [(1, 1, 1, "model", "stop")],
    "todo-write/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "tool-call-turn/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
    "tool-outcome-unknown/replay.jsonl": [],
    "tool-outcome-unknown/session.expected.jsonl": [(2, 1, 1, "model", "stop")],
    "web-fresh-round-trip/session.jsonl": [(1, 1, 1, "model", "tool-calls"), (1, 2, 1, "model", "stop")],
}
NEEDS_OVERRIDE = {"cancel/session.jsonl": CallKey(turn=1, step=1, attempt=1)}
PROVIDERS = {"approval-composer/session.jsonl": "deepseek"}
"""Logs recorded under another provider id than PROVIDER."""
LOGS = sorted(str(path.relative_to(HARNESS)) for path in HARNESS.glob("*/*.jsonl"))


def test_every_recorded_log_is_covered() -> None:
    assert sorted([*EXPECTED, *NEEDS_OVERRIDE]) == LOGS


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_script_of_every_recorded_log(name: str) -> None:
    script = derive_script(read_log(HARNESS / name))
    got = [(e.call.turn, e.call.step, e.call.attempt, e.kind, e.finish_kind) for e in script.entries]
    assert got == EXPECTED[name]
    assert script.providers == ((PROVIDERS.get(name, PROVIDER),) if got else ())
    for entry in script.entries:
        assert isinstance(entry.chunks[-1], Finish)
        assert sum(isinstance(chunk, Finish) for chunk in entry.chunks) == 1
        assert entry.override is None
        assert entry.end is None


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_entries_hold_every_recorded_chunk_of_the_log(name: str) -> None:
    path = HARNESS / name
    log = read_log(path)
    seed = log.info.seed_length
    recorded = sum(1 for event, _ in log.events() if event.type == "assistant/chunk" and event.seq >= seed)
    script = derive_script(log)
    assert sum(len(e.chunks) for e in script.entries if e.kind == "model") == recorded


def test_a_cancelled_stream_needs_an_override_naming_the_call_and_the_file() -> None:
    path = HARNESS / "cancel" / "session.jsonl"
    with pytest.raises(ScriptError) as caught:
        derive_script(read_log(path))
    error = caught.value
    assert error.call == NEEDS_OVERRIDE["cancel/session.jsonl"]
    assert error.place == f"{path}:11"
    assert "needs an override" in str(error)
    assert "(1,1,1)" in str(error)
    entries, _ = derive_entries(read_log(path))  # the raw derivation keeps the unfinished entry
    assert [(e.call, e.finished, len(e.chunks)) for e in entries] == [(CallKey(turn=1, step=1), False, 2)]


def test_the_empty_response_retry_is_attempt_two_of_the_same_step() -> None:
    script = derive_script(read_log(HARNESS / "empty-response-retry" / "session.jsonl"))
    first, retry = script.entries
    assert first.call == CallKey(turn=1, step=1, attempt=1)
    assert retry.call == CallKey(turn=1, step=1, attempt=2)
    assert first.chunks == (
        UsageChunk(TokenUsage(input_tokens=0, output_tokens=0)),
        Finish(
            reason=FinishError(
                LlmFailure(
                    message="model returned a completed response with no content",
                    code=FailureCode.EMPTY_RESPONSE,
                )
            )
        ),
    )


def test_a_marked_compaction_call_is_a_synthetic_stream_keyed_like_the_call_it_prepares() -> None:
    script = derive_script(read_log(HARNESS / "compaction-recovery" / "session.jsonl"))
    compaction = script.entries[2]
    text = "The request established a durable compaction premise."
    assert compaction.kind == "compaction"
    assert compaction.call == CallKey(turn=1, step=2, attempt=1, purpose="compaction")
    assert script.entries[3].call == CallKey(turn=1, step=2, attempt=2)
    assert compaction.chunks == (
        BlockStart(index=0, block_type="text"),
        BlockEnd(index=0, block=TextBlock(text)),
        UsageChunk(TokenUsage(input_tokens=20, output_tokens=4)),
        Finish(reason=FinishStop()),
    )
    assert compaction.place.endswith("session.jsonl:22")


def _compaction_log(tmp_path: Path, summary: dict[str, object]) -> Path:
    raw = [{"type": "text", "text": "summary"}]
    log = LogBuilder().add("turn/start", {"turn": 1}).header()
    log.step(1, 1, text_call("one"))
    log.add("compaction/summary", {"compactionId": "c", "rawOutput": raw, "llmStreamCall": True, **summary})
    log.step(1, 2, text_call("two"))
    log.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    log.add("compaction/summary", {"compactionId": "d", "rawOutput": raw, "llmStreamCall": True})
    return log.write(tmp_path / "session.jsonl")


def test_a_compaction_before_step_start_is_keyed_by_the_next_step_and_between_turns_by_the_next_turn(
    tmp_path: Path,
) -> None:
    script = derive_script(read_log(_compaction_log(tmp_path, {})))
    assert [(e.call.turn, e.call.step, e.call.attempt, e.kind) for e in script.entries] == [
        (1, 1, 1, "model"),
        (1, 2, 1, "compaction"),
        (1, 2, 1, "model"),
        (2, 1, 1, "compaction"),
    ]
    assert script.entries[1].chunks[-1] == Finish(reason=FinishStop())
    assert not any(isinstance(c, UsageChunk) for c in script.entries[1].chunks)


def test_a_logged_call_key_is_the_compaction_entrys_key_and_a_missing_one_is_derived(tmp_path: Path) -> None:
    logged = {
        "turn": 1,
        "step": 2,
        "attempt": 3,
        "purpose": "compaction",
    }  # not what the derivation would give
    script = derive_script(read_log(_compaction_log(tmp_path, {"callKey": logged})))
    keys = [e.call for e in script.entries if e.kind == "compaction"]
    assert keys == [
        CallKey(turn=1, step=2, attempt=3, purpose="compaction"),  # as logged
        CallKey(turn=2, step=1, attempt=1, purpose="compaction"),  # no callKey: derived
    ]


def test_an_unmarked_summary_adds_no_entry_and_a_marked_one_without_raw_output_is_refused(
    tmp_path: Path,
) -> None:
    unmarked = derive_script(read_log(_compaction_log(tmp_path, {"llmStreamCall": False})))
    assert [e.kind for e in unmarked.entries] == ["model", "model", "compaction"]
    path = HARNESS / "compaction-recovery" / "session.jsonl"
    lines = path.read_text().splitlines()
    event = json.loads(lines[21])
    del event["data"]["rawOutput"]
    lines[21] = json.dumps(event)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n")
    with pytest.raises(ScriptError, match="no rawOutput") as caught:
        derive_script(read_log(broken))
    assert caught.value.place == f"{broken}:22"
    assert caught.value.call == CallKey(turn=1, step=2, attempt=1, purpose="compaction")


def test_a_bad_chunk_names_the_file_line_and_seq(tmp_path: Path) -> None:
    lines = (HARNESS / "error-finish" / "session.jsonl").read_text().splitlines()
    lines[10] = lines[10].replace('"kind":"error"', '"kind":"exploded"')
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ScriptError) as caught:
        derive_script(read_log(path))
    assert caught.value.place == f"{path}:11"
    assert "seq 9" in str(caught.value)
    assert "exploded" in str(caught.value)


def test_an_unknown_chunk_field_is_accepted_and_a_mistyped_one_refused(tmp_path: Path) -> None:
    # the original adds fields over time: its logs are read, and the log keeps them as written
    log = LogBuilder().add("turn/start", {"turn": 1}).add("step/start", {"turn": 1, "step": 1})
    for chunk in text_call("x"):
        with_extra = {**msgspec.to_builtins(chunk), "y": {"nested": [1]}}
        log.add("assistant/chunk", {"turn": 1, "step": 1, "chunk": with_extra})
    script = derive_script(read_log(log.write(tmp_path / "s.jsonl")))
    assert [entry.finish_kind for entry in script.entries] == ["stop"]
    bad = LogBuilder().add("turn/start", {"turn": 1}).add("step/start", {"turn": 1, "step": 1})
    bad.add("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": 1}})
    with pytest.raises(ScriptError, match=r"Expected `str`, got `int`"):
        derive_script(read_log(bad.write(tmp_path / "bad.jsonl")))


def test_a_torn_log_refuses_its_last_stream(tmp_path: Path) -> None:
    log = LogBuilder().add("turn/start", {"turn": 1}).header().add("step/start", {"turn": 1, "step": 1})
    log.chunks(1, 1, text_call("cut")[:2])
    with pytest.raises(ScriptError, match=r"call \(1,1,1\) has no finish"):
        derive_script(read_log(log.write(tmp_path / "torn.jsonl")))


def test_a_stream_cut_off_by_the_next_step_is_refused_naming_its_own_key(tmp_path: Path) -> None:
    log = LogBuilder().add("turn/start", {"turn": 1}).header()
    log.step(1, 1, text_call("cut")[:2])
    log.step(1, 2, text_call("next"))
    entries, _ = derive_entries(read_log(log.write(tmp_path / "s.jsonl")))
    assert [(e.call.step, e.finished) for e in entries] == [(1, False), (2, True)]
    with pytest.raises(ScriptError) as caught:
        derive_script(read_log(tmp_path / "s.jsonl"))
    assert caught.value.call == CallKey(turn=1, step=1)


def test_a_child_log_is_sliced_at_its_seed_length(tmp_path: Path) -> None:
    parent = LogBuilder("parent").turn(1, [text_call("inherited")])
    child = LogBuilder("child", parent="parent", seed_length=len(parent.events))
    child.events = list(parent.events)
    child.add("session/end-seed", {}).turn(2, [text_call("own")])
    script = derive_script(read_log(child.write(tmp_path / "session.1.jsonl")))
    assert [(e.call, e.chunks[1]) for e in script.entries] == [
        (CallKey(turn=2, step=1), TextDelta(index=0, text="own"))
    ]
    assert script.log.seed_length == len(parent.events)
    assert script.log.parent_id == "parent"
    fixture = read_log(HARNESS / "subagent-fork-in-process" / "session.1.jsonl")
    assert fixture.info.seed_length == 42


def test_packing_does_not_change_the_script(tmp_path: Path) -> None:
    log = LogBuilder().turn(
        1,
        [
            [
                BlockStart(index=0, block_type="text"),
                *[TextDelta(index=0, text=c) for c in "abcd"],
                BlockEnd(index=0, block=TextBlock("abcd")),
                Finish(reason=FinishStop()),
            ]
        ],
    )
    packed = derive_script(read_log(log.write(tmp_path / "packed.jsonl")))
    plain = derive_script(read_log(log.write(tmp_path / "plain.jsonl", pack=False)))
    assert len((tmp_path / "packed.jsonl").read_text().splitlines()) < len(log.events) + 1
    assert packed.entries[0].chunks == plain.entries[0].chunks
    assert packed.entries[0].place != plain.entries[0].place  # line numbers differ, keys and chunks do not


def test_a_stored_session_derives_the_same_script_and_names_seqs(tmp_path: Path) -> None:
    path = HARNESS / "compaction-recovery" / "session.jsonl"
    with SessionStore(tmp_path / "s.db") as store:
        info = import_jsonl(store, path)
        stored = derive_script(stored_log(store, info.id))
    from_file = derive_script(read_log(path))
    assert [(e.call, e.kind, e.chunks) for e in stored.entries] == [
        (e.call, e.kind, e.chunks) for e in from_file.entries
    ]
    assert stored.entries[0].place == f"session {info.id} seq 8"
    assert stored.log.id == info.id
    assert stored.providers == (PROVIDER,)


def test_a_stored_fork_is_sliced_at_its_seed(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        info = import_jsonl(store, HARNESS / "multi-turn" / "session.jsonl")
        first_end = next(e.seq for e in store.events(info.id) if e.type == "turn/end")
        child = store.fork(info.id, first_end)
        assert derive_script(stored_log(store, child.id)).entries == ()
        assert [e.call.turn for e in derive_script(stored_log(store, info.id)).entries] == [1, 2]


def test_recorded_turns_list_each_turns_user_inputs(tmp_path: Path) -> None:
    turns = recorded_turns(read_log(HARNESS / "multi-turn" / "session.jsonl"))
    assert [t.turn for t in turns] == [1, 2]
    assert all(len(t.inputs) == 1 for t in turns)
    texts = [t.inputs[0].content[0].text for t in turns]  # type: ignore[union-attr]  # the inputs are text
    assert all(texts)
    assert texts[0] != texts[1]
    child = recorded_turns(read_log(HARNESS / "subagent-fork-in-process" / "session.1.jsonl"))
    assert [t.turn for t in child] == [2]  # the inherited turn 1 is the parent's
    cancel = recorded_turns(read_log(HARNESS / "cancel" / "session.jsonl"))
    assert cancel[0].inputs[0].content[0].text == (  # type: ignore[union-attr]  # a text input
        "Start a long task; this turn will be cancelled mid-stream."
    )


def test_recorded_turns_keep_inputless_turns_and_a_prompt_logged_before_its_turn(tmp_path: Path) -> None:
    message = {
        "id": "m1",
        "role": "user",
        "content": [{"type": "text", "text": "hi"}],
        "source": {"kind": "user"},
    }
    log = LogBuilder().add("user/message", message, surface_op="append")
    log.add("turn/start", {"turn": 1}).add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    log.add("turn/start", {"turn": 2}).add("turn/end", {"turn": 2, "reason": {"kind": "blocked"}})
    turns = recorded_turns(read_log(log.write(tmp_path / "s.jsonl")))
    assert [(t.turn, len(t.inputs)) for t in turns] == [(1, 1), (2, 0)]


def test_a_scenario_directory_brings_its_child_logs(tmp_path: Path) -> None:
    recording = load_recording(HARNESS / "subagent-fork-in-process")
    assert [s.log.name.rsplit("/", 1)[-1] for s in recording.scripts] == ["session.jsonl", "session.1.jsonl"]
    assert recording.providers == (PROVIDER,)
    with pytest.raises(ScriptError, match=r"no session\.jsonl here"):
        load_recording(tmp_path)


def test_children_are_ordered_by_created_at_then_id(tmp_path: Path) -> None:
    LogBuilder("root").turn(1, [text_call("r")]).write(tmp_path / "root.jsonl")
    spawned = SpawnedBy(turn=1, step=1, call_id="c")
    for name, created, child_id in (("a", 5, "zz"), ("b", 3, "yy"), ("c", 5, "aa")):
        LogBuilder(child_id, created_at=created, parent="root", spawned_by=spawned).turn(
            1, [text_call(name)]
        ).write(tmp_path / f"{name}.jsonl")
    recording = load_recording(tmp_path / "root.jsonl", children=[tmp_path / f"{n}.jsonl" for n in "abc"])
    assert [s.log.id for s in recording.children] == ["yy", "aa", "zz"]
    assert recording.children[0].log.spawned_by == spawned
