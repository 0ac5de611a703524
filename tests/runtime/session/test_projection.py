"""Projection: the surface fold (append, replace), the request header, todos and title; and the store's filter by
event class or wire tag that projection reads through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.runtime.session import (
    EVENT_TYPES,
    AssistantChunk,
    LogRuleError,
    LogState,
    Replace,
    SessionStoreProtocol,
    StoredEvent,
    TodoWrite,
    TurnEnd,
    event_tags,
    import_jsonl,
    project,
)

from .conftest import HARNESS


def test_compaction_replace_folds_into_the_message_list(store: SessionStoreProtocol) -> None:
    session = import_jsonl(store, HARNESS / "compaction-recovery" / "session.jsonl").id
    events = list(store.events(session))
    projection = project(events)
    replace = next(e for e in events if isinstance(e.surface_op, Replace))
    assert projection.replacements == 1
    seqs = [m.seq for m in projection.messages]
    assert replace.seq in seqs
    assert replace.surface_op.start not in seqs  # type: ignore[union-attr]  # a Replace
    appended = [e.seq for e in events if e.surface_op == "append"]
    assert set(seqs) <= {*appended, replace.seq}
    assert projection.header is not None
    assert projection.header.config.model == "deepseek-v4-flash"
    assert projection.title == "Establish a durable compaction premise"


def test_todos_and_the_latest_header_win(store: SessionStoreProtocol) -> None:
    session = import_jsonl(store, HARNESS / "todo-write" / "session.jsonl").id
    events = list(store.events(session))
    projection = project(events)
    last_todos = [json.loads(e.data)["todos"] for e in events if e.type == "todo/write"][-1]
    assert projection.todos is not None
    assert [(t.content, t.status) for t in projection.todos] == [
        (t["content"], t["status"]) for t in last_todos
    ]
    header = [json.loads(e.data)["header"] for e in events if e.type == "request/header"][-1]
    assert json.loads(projection.header_json or "null") == header


def test_projection_streams_from_projected_types_only(store: SessionStoreProtocol) -> None:
    from dsh.runtime.session import PROJECTED_TYPES

    session = import_jsonl(store, HARNESS / "subagent-fork-in-process" / "session.jsonl").id
    assert project(store.events(session, types=PROJECTED_TYPES)) == project(store.events(session))


def test_an_empty_assistant_message_is_logged_but_not_projected() -> None:
    empty = StoredEvent(
        type="assistant/message",
        seq=0,
        time=0,
        data='{"turn":1,"step":1,"message":{"role":"assistant","content":[],'
        '"source":{"kind":"model","provider":"p","model":"m"}}}',
        surface_op="append",
        source_event_seqs=(),
    )
    LogState().feed(empty)
    assert project([empty]).messages == ()


def _result(seq: int, text: str, *, error: bool = False, op: object = "append") -> StoredEvent:
    message = {
        "role": "user",
        "source": {"kind": "tool", "callId": "c"},
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "c",
                "isError": error,
                "content": [{"type": "text", "text": text}],
            }
        ],
    }
    return StoredEvent(
        type="tool/result",
        seq=seq,
        time=0,
        data=json.dumps({"turn": 1, "step": 1, "message": message}),
        surface_op=op,  # type: ignore[arg-type]  # the tests pass valid SurfaceOps
        source_event_seqs=(seq - 1,) if op != "append" else None,
    )


def test_pruning_may_change_only_the_tool_result_content() -> None:
    state = LogState()
    state.feed(_result(0, "long output"))
    pruned = _result(1, "[pruned]", op=Replace(start=0, end=0))
    state.feed(pruned)
    assert [
        json.loads(m.json)["content"][0]["content"][0]["text"]
        for m in project([_result(0, "x"), pruned]).messages
    ] == ["[pruned]"]
    with pytest.raises(LogRuleError) as changed:
        state.feed(_result(2, "y", error=True, op=Replace(start=1, end=1)))
    assert changed.value.rule == "surface.prune-content"
    with pytest.raises(LogRuleError) as uncovered:
        state.feed(
            StoredEvent(
                type="tool/result",
                seq=2,
                time=0,
                data=_result(2, "z").data,
                surface_op=Replace(start=1, end=1),
                source_event_seqs=(0,),
            )
        )
    assert uncovered.value.rule == "surface.replace-sources"
    assert [n.seq for n in state.surface.nodes] == [1]  # refused events leave the fold as it was


def test_events_are_filtered_by_class_or_by_tag(store: SessionStoreProtocol, tmp_path: Path) -> None:
    session = import_jsonl(store, HARNESS / "todo-write" / "session.jsonl").id
    by_tag = list(store.events(session, types=("turn/end", "todo/write")))
    assert {e.type for e in by_tag} == {"turn/end", "todo/write"}
    assert list(store.events(session, types=(TurnEnd, TodoWrite))) == by_tag
    assert list(store.events(session, types=[TurnEnd, "todo/write"])) == by_tag
    kept = list(store.events(session, skip_types=(AssistantChunk,)))
    assert kept == [e for e in store.events(session) if e.type != "assistant/chunk"]
    with pytest.raises(TypeError, match="not an event type"):
        list(store.events(session, types=(StoredEvent,)))  # type: ignore[arg-type]  # not an event class


def test_an_opaque_type_is_filtered_by_its_tag(store: SessionStoreProtocol, tmp_path: Path) -> None:
    log = tmp_path / "opaque.jsonl"
    header = {"type": "session", "version": 0, "id": "opaque-1", "createdAt": 1}
    lines = [header, {"type": "goal/set", "seq": 0, "time": 2, "data": {"goal": "g"}}]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = import_jsonl(store, log).id
    [goal] = store.events(session, types=("goal/set",))
    assert goal.type == "goal/set"
    assert list(store.events(session, types=(TurnEnd,))) == []


def test_each_event_class_names_its_tag() -> None:
    assert TurnEnd.TAG == "turn/end"
    assert all(tag == cls.TAG for tag, cls in EVENT_TYPES.items())
    assert event_tags((TurnEnd, "goal/set")) == ("turn/end", "goal/set")
    assert event_tags(None) is None
