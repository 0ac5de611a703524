"""The override sidecar: its strict schema, and each form applied to a derived script (replace, patch, throw, hang),
by key, including calls the log never finished or never recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.replay import (
    Hang,
    HangOverride,
    OverrideError,
    Overrides,
    ScriptError,
    Throw,
    derive_script,
    load_overrides,
    load_recording,
    parse_overrides,
    read_log,
)
from dsh.runtime.llm import (
    BlockStart,
    CallKey,
    Finish,
    FinishStop,
    TextDelta,
    encode_chunk,
)

from .logs import HARNESS, LogBuilder, text_call

CANCEL = HARNESS / "cancel" / "session.jsonl"
RETRY = HARNESS / "empty-response-retry" / "session.jsonl"


def chunk_json(chunks: list[Any]) -> list[Any]:
    return [json.loads(encode_chunk(c)) for c in chunks]


def overrides(*items: dict[str, Any]) -> Overrides:
    return parse_overrides(json.dumps({"overrides": list(items)}), file="override.json")


def test_a_hang_covers_a_cancelled_stream_and_serves_its_recorded_prefix() -> None:
    script = derive_script(
        read_log(CANCEL), overrides({"op": "hang", "turn": 1, "step": 1, "readyFile": ".ready"})
    )
    (entry,) = script.entries
    assert entry.call == CallKey(turn=1, step=1)
    assert entry.end == Hang(".ready")
    assert entry.override == "hang"
    assert entry.finish_kind == "aborted"
    assert entry.chunks == (BlockStart(index=0, block_type="text"), TextDelta(index=0, text="partial"))


def test_a_throw_replaces_a_recorded_call_keeping_the_chunks_before_its_finish() -> None:
    script = derive_script(
        read_log(RETRY),
        overrides({"op": "throw", "turn": 1, "step": 1, "attempt": 2, "code": "SERVER", "message": "boom"}),
    )
    first, second = script.entries
    assert first.override is None
    assert second.end == Throw("SERVER", "boom")
    assert second.finish_kind == "error"
    assert not any(isinstance(c, Finish) for c in second.chunks)
    assert len(second.chunks) == 4  # block-start, delta, block-end, usage


def test_a_throw_with_explicit_chunks_and_a_throw_at_an_unrecorded_key_is_added_in_key_order() -> None:
    prefix = chunk_json([BlockStart(index=0, block_type="text")])
    script = derive_script(
        read_log(RETRY),
        overrides(
            {
                "op": "throw",
                "turn": 1,
                "step": 1,
                "attempt": 3,
                "code": "AUTH",
                "message": "401",
                "chunks": prefix,
            },
            {"op": "throw", "turn": 1, "step": 1, "code": "AUTH", "message": "401", "chunks": []},
        ),
    )
    assert [(e.call.attempt, e.override, len(e.chunks)) for e in script.entries] == [
        (1, "throw", 0),
        (2, None, 5),
        (3, "throw", 1),
    ]


def test_replace_sets_the_chunks_of_a_call_or_adds_one() -> None:
    chunks = chunk_json(text_call("replaced"))
    script = derive_script(
        read_log(CANCEL),
        overrides(
            {"op": "replace", "turn": 1, "step": 1, "chunks": chunks},
            {"op": "replace", "turn": 2, "step": 1, "kind": "compaction", "chunks": chunks},
        ),
    )
    assert [(e.call, e.kind, e.override) for e in script.entries] == [
        (CallKey(turn=1, step=1), "model", "replace"),
        (CallKey(turn=2, step=1, purpose="compaction"), "compaction", "replace"),
    ]
    assert script.entries[0].chunks == tuple(text_call("replaced"))
    assert script.entries[0].place == "override.json: overrides[0]"


def test_a_patch_replaces_a_chunk_by_index_or_appends_a_finish_to_a_cut_stream() -> None:
    stop = json.loads(encode_chunk(Finish(reason=FinishStop())))
    end = {"type": "block-end", "index": 0, "block": {"type": "text", "text": "partial"}}
    script = derive_script(
        read_log(CANCEL),
        overrides(
            {"op": "patch", "turn": 1, "step": 1, "index": 2, "chunk": end},
            {"op": "patch", "turn": 1, "step": 1, "index": 3, "chunk": stop},
        ),
    )
    (entry,) = script.entries
    assert entry.finish_kind == "stop"
    assert entry.override == "patch"
    assert len(entry.chunks) == 4
    changed = derive_script(
        read_log(RETRY),
        overrides(
            {
                "op": "patch",
                "turn": 1,
                "step": 1,
                "attempt": 2,
                "index": 1,
                "chunk": {"type": "text-delta", "index": 0, "text": "Recovered."},
            }
        ),
    )
    assert changed.entries[1].chunks[1] == TextDelta(index=0, text="Recovered.")


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"op": "hang", "turn": 1, "step": 1, "ready": "x"}], "unknown field `ready`"),
        ([{"op": "explode", "turn": 1, "step": 1}], "Invalid value 'explode'"),
        ([{"op": "hang", "step": 1}], "missing required field `turn`"),
        ([{"op": "hang", "turn": 0, "step": 1}], "count from 1"),
        ([{"op": "hang", "turn": 1, "step": 1, "kind": "title"}], "Invalid enum value 'title'"),
        ([{"op": "throw", "turn": 1, "step": 1, "code": "", "message": "m"}], "non-empty code and message"),
        (
            [
                {
                    "op": "patch",
                    "turn": 1,
                    "step": 1,
                    "index": -1,
                    "chunk": {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
                }
            ],
            "index counts from 0",
        ),
        (
            [
                {
                    "op": "replace",
                    "turn": 1,
                    "step": 1,
                    "chunks": [{"type": "text-delta", "index": 0, "text": "x"}],
                }
            ],
            "never started",
        ),
        ([{"op": "replace", "turn": 1, "step": 1, "chunks": []}], "must end with a finish"),
        (
            [
                {
                    "op": "hang",
                    "turn": 1,
                    "step": 1,
                    "chunks": [{"type": "finish", "reason": {"kind": "stop"}}],
                }
            ],
            "must not hold a finish",
        ),
        (
            [
                {
                    "op": "replace",
                    "turn": 1,
                    "step": 1,
                    "chunks": [{"type": "finish", "reason": {"kind": "stop"}, "extra": 1}],
                }
            ],
            "unknown field `extra`",
        ),
        (
            [
                {"op": "hang", "turn": 1, "step": 1},
                {"op": "throw", "turn": 1, "step": 1, "code": "A", "message": "m"},
            ],
            "only patches of distinct chunks",
        ),
        (
            [
                {
                    "op": "patch",
                    "turn": 1,
                    "step": 1,
                    "index": 0,
                    "chunk": {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
                }
            ]
            * 2,
            "patched twice",
        ),
    ],
)
def test_a_bad_override_file_is_refused_at_load_naming_the_override(
    items: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(OverrideError) as caught:
        overrides(*items)
    assert message in str(caught.value)
    assert str(caught.value).startswith("override.json")


def test_the_file_must_be_an_object_with_overrides(tmp_path: Path) -> None:
    path = tmp_path / "override.json"
    path.write_text('[{"kind": "hang"}]')
    with pytest.raises(OverrideError, match=r"expected \{\"overrides\"") as caught:
        load_overrides(path)
    assert caught.value.file == str(path)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            {
                "op": "patch",
                "turn": 9,
                "step": 1,
                "index": 0,
                "chunk": {"type": "finish", "reason": {"kind": "stop"}},
            },
            "no model entry at (9,1,1) to patch; recorded: (1,1,1) model",
        ),
        (
            {
                "op": "patch",
                "turn": 1,
                "step": 1,
                "index": 5,
                "chunk": {"type": "finish", "reason": {"kind": "stop"}},
            },
            "past the end of (1,1,1), which has 2 chunks",
        ),
        (
            {
                "op": "patch",
                "turn": 1,
                "step": 1,
                "index": 0,
                "chunk": {"type": "finish", "reason": {"kind": "stop"}},
            },
            "after patching, call (1,1,1) is not a valid stream",
        ),
    ],
)
def test_an_override_that_does_not_fit_the_log_is_refused(item: dict[str, Any], message: str) -> None:
    with pytest.raises(OverrideError, match="overrides\\[0\\]") as caught:
        derive_script(read_log(CANCEL), overrides(item))
    assert message in str(caught.value)


def test_an_override_at_another_key_leaves_the_cancelled_stream_refused() -> None:
    with pytest.raises(ScriptError, match=r"needs an override in override\.json"):
        derive_script(read_log(CANCEL), overrides({"op": "hang", "turn": 1, "step": 2}))


def test_a_scenario_directorys_override_json_applies_to_its_primary_log(tmp_path: Path) -> None:
    (tmp_path / "session.jsonl").write_bytes(CANCEL.read_bytes())
    (tmp_path / "override.json").write_text(json.dumps({"overrides": [{"op": "hang", "turn": 1, "step": 1}]}))
    recording = load_recording(tmp_path)
    assert recording.root.entries[0].end == Hang()
    other = tmp_path / "other.json"
    other.write_text(
        json.dumps({"overrides": [{"op": "throw", "turn": 1, "step": 1, "code": "X", "message": "m"}]})
    )
    assert load_recording(tmp_path, override=other).root.entries[0].end == Throw("X", "m")


def test_overrides_can_be_built_in_code() -> None:
    built = Overrides("inline", (HangOverride(turn=1, step=1, ready_file="r"),))
    assert derive_script(read_log(CANCEL), built).entries[0].end == Hang("r")


def test_two_compactions_in_one_step_are_numbered_and_overridden_apart(tmp_path: Path) -> None:
    raw = [{"type": "text", "text": "s"}]
    log = LogBuilder().add("turn/start", {"turn": 1}).header()
    for name in "ab":
        log.add("compaction/summary", {"compactionId": name, "rawOutput": raw, "llmStreamCall": True})
    log.step(1, 1, text_call("x"))
    path = log.write(tmp_path / "s.jsonl")
    entries = derive_script(read_log(path)).entries
    assert [(e.kind, e.call.attempt) for e in entries] == [("compaction", 1), ("compaction", 2), ("model", 1)]
    second = {"op": "hang", "turn": 1, "step": 1, "attempt": 2, "kind": "compaction"}
    hung = derive_script(read_log(path), overrides(second)).entries
    assert [e.end for e in hung] == [None, Hang(None), None]


def test_the_originals_positional_override_file_is_read_and_dshs_wins_beside_it(tmp_path: Path) -> None:
    (tmp_path / "session.jsonl").write_bytes(CANCEL.read_bytes())
    (tmp_path / "replay.override.json").write_text('[{"kind": "hang", "readyFile": ".ready"}]')
    assert load_recording(tmp_path).root.entries[0].end == Hang(".ready")
    (tmp_path / "override.json").write_text(json.dumps({"overrides": [{"op": "hang", "turn": 1, "step": 1}]}))
    assert load_recording(tmp_path).root.entries[0].end == Hang()
