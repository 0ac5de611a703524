"""Fields dsh does not model, at any depth of an event of any known type (content blocks, sources, chunks, reasons,
headers...), survive import -> store -> export unchanged, and the typed view still reads what dsh models."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.runtime.llm import LlmFailure, MessageId, TextBlock, TokenUsage, ToolSchema, UserMessage
from dsh.runtime.session import (
    EVENT_TYPES,
    ApprovalAsked,
    ApprovalAskedData,
    ApprovalDecided,
    ApprovalDecidedData,
    ApprovalPolicy,
    ApprovalPolicyData,
    BracketData,
    CommandDone,
    CommandDoneData,
    CommandRun,
    CommandRunData,
    CommandSource,
    CompactionEnd,
    CompactionPrune,
    CompactionStart,
    CompactionSummary,
    CountingIds,
    EmptyData,
    EpochHeader,
    Event,
    FixedClock,
    HeaderConfig,
    HookInvoked,
    HookInvokedData,
    HookResult,
    HookResultData,
    InboxSpliced,
    InboxSplicedData,
    JobSettled,
    JobSettledData,
    JobStarted,
    JobStartedData,
    LlmRetry,
    LlmRetryData,
    LlmRetryStarted,
    LlmRetryStartedData,
    PermissionPreset,
    PermissionPresetData,
    PruneData,
    RequestContext,
    RequestContextData,
    RequestHeader,
    RequestHeaderData,
    SandboxMode,
    SandboxModeData,
    SessionEndSeed,
    SessionInfo,
    SessionStore,
    SessionTitle,
    SessionTitleData,
    SessionTitleLlmRequest,
    SessionTitleLlmRequestData,
    ShadowedRange,
    StoredEvent,
    SubagentDescriptor,
    SubagentDescriptorData,
    SummaryData,
    TitleRoute,
    Todo,
    TodoWrite,
    TodoWriteData,
    export_jsonl,
    import_jsonl,
    write_jsonl,
)
from tests.strategies import TurnSpec, turn_events, turn_specs, with_extra_fields

FAILURE = LlmFailure(message="m", code="SERVER", status=500)
OTHER_TYPES: list[Event] = [
    RequestHeader(
        data=RequestHeaderData(
            header=EpochHeader(
                config=HeaderConfig(provider="p", model="m", max_tokens=9),
                system="s",
                tools=(ToolSchema(name="t", description="d", parameters={"type": "object"}),),
            ),
            reason="initial",
        )
    ),
    RequestContext(data=RequestContextData(provider="p", model="m", context_window=100)),
    TodoWrite(data=TodoWriteData(todos=(Todo(content="a", status="pending"),))),
    CompactionStart(data=BracketData(compaction_id="c", turn=1)),
    CompactionSummary(
        data=SummaryData(
            compaction_id="c",
            summary=(TextBlock("s"),),
            raw_output=(TextBlock("s"),),
            llm_stream_call=True,
            shadowed_range=ShadowedRange(start=2, end=2),
            shadowed_seqs=(2,),
            usage=TokenUsage(input_tokens=1, output_tokens=1),
        )
    ),
    CompactionEnd(data=BracketData(compaction_id="c", turn=1, failure=FAILURE)),
    CompactionPrune(data=PruneData(compaction_id="c", turn=1, shadowed_seqs=(2,), shadowed_token_count=3)),
    LlmRetry(
        data=LlmRetryData(
            retry_id="r",
            turn=1,
            step=1,
            provider="p",
            mode="normal",
            policy_key="k",
            retry=1,
            delay_ms=5,
            failure=FAILURE,
        )
    ),
    LlmRetryStarted(data=LlmRetryStartedData(retry_id="r", turn=1, step=1, retry=1)),
    SubagentDescriptor(data=SubagentDescriptorData(version=2, mode="one-shot", provider="fork", label="l")),
    SessionTitle(data=SessionTitleData(title="t", message_seqs=(2,))),
    SessionTitleLlmRequest(
        data=SessionTitleLlmRequestData(
            title_provider="titles",
            message_seqs=(2,),
            route=TitleRoute(provider="p", model="m"),
            system="name it",
            messages=(UserMessage(id=MessageId("title-1"), content=(TextBlock("frame"),)),),
            max_tokens=32,
        )
    ),
    InboxSpliced(
        data=InboxSplicedData(
            target="next-step",
            start=0,
            inserted=(UserMessage(id=MessageId("m"), content=(TextBlock("steer"),)),),
        )
    ),
    JobStarted(
        data=JobStartedData(
            job_id="job-1", kind="stream", tool="bash", call_id="c", turn=1, step=1, label="l"
        )
    ),
    JobSettled(data=JobSettledData(job_id="job-1", status="killed", reason="r")),
    ApprovalPolicy(data=ApprovalPolicyData(policy="ask")),
    ApprovalAsked(data=ApprovalAskedData(id="a", tool_name="bash", call_id="c", reason="r")),
    ApprovalDecided(data=ApprovalDecidedData(id="a", outcome="rejected", message="no")),
    PermissionPreset(data=PermissionPresetData(preset="read-only")),
    SandboxMode(data=SandboxModeData(mode="read-only")),
    CommandRun(
        data=CommandRunData(
            command_id="c1", name="permission", args=" read-only", source=CommandSource(kind="user")
        )
    ),
    CommandDone(data=CommandDoneData(command_id="c1", kind="success", text="Permission preset: read-only.")),
    HookInvoked(data=HookInvokedData(turn=1, point="Stop", dialect="codex", handler_id="codex:Stop:1")),
    HookResult(
        data=HookResultData(
            turn=1, point="Stop", handler_id="codex:Stop:1", decision="pass", exit_code=0, duration_ms=2.5
        )
    ),
    SessionEndSeed(data=EmptyData()),
]
"""One event of each known type the generated turns do not write (logged after them)."""


def test_the_property_covers_every_known_type() -> None:
    turn = turn_events(1, 0, TurnSpec("p", ("a",), (("bash", "ok"),)))
    assert {type(e).__struct_config__.tag for e in [*turn, *OTHER_TYPES]} == set(EVENT_TYPES)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=st.lists(turn_specs, min_size=1, max_size=2), pack=st.booleans(), data=st.data())
def test_unknown_fields_at_any_depth_survive_import_store_and_export(
    tmp_path: Path, specs: list[TurnSpec], pack: bool, data: st.DataObject
) -> None:
    written: list[StoredEvent] = []
    events: list[Event] = []
    for turn, spec in enumerate(specs, 1):
        events += turn_events(turn, len(events), spec)
    for event in [*events, *OTHER_TYPES]:
        typed = StoredEvent.from_event(event, seq=len(written), time=len(written))
        extended = data.draw(with_extra_fields(json.loads(typed.data)))
        stored = StoredEvent(
            type=typed.type,
            seq=typed.seq,
            time=typed.time,
            data=json.dumps(extended, ensure_ascii=False, separators=(",", ":")),
            surface_op=typed.surface_op,
            source_event_seqs=typed.source_event_seqs,
        )
        assert type(stored.view().data) is type(typed.view().data)  # still decodes, strictly where it must
        written.append(stored)
    info = SessionInfo(id=CountingIds().new_session_id(), created_at=0)
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    path = folder / "extra.jsonl"
    path.write_bytes(b"".join(write_jsonl(info, written, pack=pack)))
    with SessionStore(
        folder / "s.db", clock=FixedClock(0, 1), ids=CountingIds("i"), synchronous="OFF"
    ) as store:
        imported = import_jsonl(store, path)
        assert list(store.events(imported.id)) == written  # stored as written, byte for byte
        out = io.BytesIO()
        export_jsonl(store, imported.id, out, pack=pack)
    assert out.getvalue().splitlines()[1:] == path.read_bytes().splitlines()[1:]
