"""Events round-trip losslessly: typed event -> stored -> SQLite -> JSONL -> stored, and typed views decode."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.runtime.llm import TextBlock
from dsh.runtime.session import (
    FORMAT_VERSION,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    CountingIds,
    OpaqueEvent,
    SessionInfo,
    ShadowedRange,
    StoredEvent,
    TurnStart,
    TurnStartData,
    core_event_types,
    encode_data,
    read_jsonl,
    write_jsonl,
)
from dsh.runtime.session.store._rows import event_row, row_event
from tests.runtime.session.conftest import HARNESS_LOGS
from tests.strategies import TurnSpec, turn_events, turn_specs


def test_every_core_type_of_the_architecture_has_a_tagged_struct() -> None:
    assert core_event_types() == {
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "user/message",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "request/header",
        "request/context",
        "session/end-seed",
        "todo/write",
        "compaction/start",
        "compaction/summary",
        "compaction/end",
        "compaction/prune",
        "llm/retry",
        "llm/retry-started",
        "subagent/descriptor",
        "session/title",
        "session/title-llm-request",
        "agent/inbox/spliced",
        "job/started",
        "job/settled",
        "approval/policy",
        "approval/asked",
        "approval/decided",
        "permission/preset",
        "sandbox/mode",
        "command/run",
        "command/done",
        "hook/invoked",
        "hook/result",
    }
    assert FORMAT_VERSION == 0


@given(specs=st.lists(turn_specs, min_size=1, max_size=3), pack=st.booleans())
def test_events_survive_sqlite_rows_and_jsonl(specs: list[TurnSpec], pack: bool) -> None:
    stored: list[StoredEvent] = []
    for turn, spec in enumerate(specs, 1):
        for event in turn_events(turn, len(stored), spec):
            stored.append(StoredEvent.from_event(event, seq=len(stored), time=len(stored) * 7))
    for one in stored:
        assert row_event(event_row("s", one)[1:]) == one
        view = one.view()
        assert not isinstance(view, OpaqueEvent)
        assert StoredEvent.from_event(view, seq=one.seq, time=one.time) == one
    info = SessionInfo(id=CountingIds().new_session_id(), created_at=0)
    text = b"".join(write_jsonl(info, stored, pack=pack))
    _, events = read_jsonl(io.BytesIO(text))
    assert list(events) == stored


def test_an_unknown_type_is_an_opaque_view() -> None:
    event = StoredEvent(type="team/joined", seq=3, time=1, data='{"who":"x"}', ignorable=True)
    assert event.view() == OpaqueEvent(type="team/joined", seq=3, time=1, data={"who": "x"}, ignorable=True)
    assert not event.is_core


def test_a_typed_event_knows_its_wire_tag() -> None:
    stored = StoredEvent.from_event(TurnStart(data=TurnStartData(turn=1)), seq=4, time=9)
    assert (stored.type, stored.seq, stored.time, stored.data) == ("turn/start", 4, 9, '{"turn":1}')
    assert stored.view() == TurnStart(seq=4, time=9, data=TurnStartData(turn=1))


def test_the_typed_compaction_view_keeps_every_recorded_field() -> None:
    path = (
        Path(__file__).resolve().parents[3] / "fixtures" / "harness" / "compaction-recovery" / "session.jsonl"
    )
    with path.open("rb") as lines:
        _, events = read_jsonl(lines)
        compaction = [e for e in events if e.type.startswith("compaction/")]
    assert [e.type for e in compaction] == ["compaction/start", "compaction/summary", "compaction/end"]
    for event in compaction:
        view = event.view()
        assert isinstance(view, CompactionStart | CompactionSummary | CompactionEnd)
        assert msgspec.json.decode(encode_data(view.data)) == msgspec.json.decode(event.data)
    summary = compaction[1].view()
    assert isinstance(summary, CompactionSummary)
    assert summary.data.llm_stream_call is True
    assert summary.data.raw_output is not None
    assert isinstance(summary.data.raw_output[0], TextBlock)
    assert summary.data.raw_output[0].text == "The request established a durable compaction premise."
    assert summary.data.shadowed_range == ShadowedRange(start=4, end=4)
    assert summary.data.usage is not None
    assert summary.data.usage.output_tokens == 4


_HITL_LOGS = sorted(
    p for p in HARNESS_LOGS if p.parent.name.startswith(("hook-", "escalation-", "approval-"))
)


@pytest.mark.parametrize("path", _HITL_LOGS, ids=lambda p: p.parent.name)
def test_the_originals_human_in_the_loop_events_decode_through_the_event_table(path: Path) -> None:
    """(test_jsonl's round trip covers their export, value for value.)"""
    _, events = read_jsonl(io.BytesIO(path.read_bytes()))
    typed = [
        e for e in events if e.type.startswith(("approval/", "hook/", "command/", "sandbox/", "permission/"))
    ]
    assert typed
    for event in typed:
        assert event.type in core_event_types()
        assert type(event.view()).__struct_config__.tag == event.type
