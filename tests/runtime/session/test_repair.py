"""Resume and crash repair, compared with the original's crash-repair golden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.runtime.llm import ToolCallBlock, ToolResultBlock
from dsh.runtime.session import SessionStoreProtocol, import_jsonl, open_log, project, resume
from tests.strategies import TurnSpec, turn_events

from .conftest import HARNESS


def test_repair_matches_the_original_golden(store: SessionStoreProtocol, tmp_path: Path) -> None:
    golden = (HARNESS / "tool-outcome-unknown" / "session.expected.jsonl").read_bytes().splitlines()
    crashed = tmp_path / "crashed.jsonl"
    crashed.write_bytes(b"\n".join(golden[:6]) + b"\n")  # header + seq 0..4: the tool/call was the last event
    info = import_jsonl(store, crashed)
    state, appended = resume(store, info.id)
    assert [json.loads(e.data) for e in appended] == [json.loads(line)["data"] for line in golden[6:10]]
    for event, line in zip(appended, golden[6:10], strict=True):
        expected = json.loads(line)
        assert (event.type, event.seq, event.time) == (expected["type"], expected["seq"], expected["time"])
        assert event.source_event_seqs == (
            tuple(expected["sourceEventSeqs"]) if "sourceEventSeqs" in expected else None
        )
    assert state.open_turn is None
    assert resume(store, info.id)[1] == []  # an idle session that already ends with end-seed does not grow


def test_a_requested_tool_that_never_started_gets_tool_not_started(store: SessionStoreProtocol) -> None:
    session = store.create()
    events = turn_events(1, 0, TurnSpec("go", ("a",), (("bash", None),), closed=False))
    events = events[:-1]  # the crash came before the tool/call was logged
    from dsh.runtime.session import StoredEvent

    store.append_events(session.id, [StoredEvent.from_event(e, seq=i, time=5) for i, e in enumerate(events)])
    _, appended = resume(store, session.id)
    assert [e.type for e in appended] == ["tool/result", "step/end", "turn/end", "session/end-seed"]
    result = appended[0].view().data
    assert result.error.code == "TOOL_NOT_STARTED"  # type: ignore[union-attr]  # a ToolResultData
    assert appended[0].source_event_seqs is None
    assert json.loads(appended[2].data)["reason"] == {"kind": "interrupted"}
    assert all(e.time == 5 for e in appended)


@pytest.mark.anyio
async def test_after_repair_the_projection_pairs_every_tool_call(store: SessionStoreProtocol) -> None:
    session = store.create()
    async with open_log(store, session.id, repair=False) as log:
        for event in turn_events(
            1, 0, TurnSpec("go", ("a",), (("bash", None), ("read", None)), closed=False)
        ):
            log.append(event)
    async with open_log(store, session.id) as log:
        assert log.state.open_turn is None
    messages = [m.view() for m in project(store.events(session.id)).messages]
    calls = [b.id for m in messages for b in m.content if isinstance(b, ToolCallBlock)]
    results = [b.tool_call_id for m in messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert calls == results == ["call-1-0", "call-1-1"]
