"""`AgentState`, the agent's fold of its own log: the header and whether this run wrote it, the request context, the
snapshot on the surface, the inbox queues with their rule (`inbox.splice`) and the settled jobs, fed through the
log's `LogFold` seam on open and on every append."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import pytest

from dsh.runtime.agent import SNAPSHOT_FORM, AgentState, InboxItem
from dsh.runtime.llm import MessageId, PluginSource, TextBlock, UserMessage, UserSource
from dsh.runtime.session import (
    EmptyData,
    EpochHeader,
    Event,
    HeaderConfig,
    InboxSpliced,
    InboxSplicedData,
    InboxTarget,
    JobSettled,
    JobSettledData,
    LogFormatError,
    LogRuleError,
    LogState,
    Replace,
    RequestContext,
    RequestContextData,
    RequestHeader,
    RequestHeaderData,
    SessionEndSeed,
    SessionStore,
    StoredEvent,
    UserMessageEvent,
    event_line,
    export_jsonl,
    import_jsonl,
    open_log,
)


def _message(n: int, text: str, *, snapshot: bool = False) -> UserMessage:
    source = PluginSource(plugin="system-prompt", form=SNAPSHOT_FORM) if snapshot else UserSource()
    return UserMessage(id=MessageId(f"m{n}"), content=(TextBlock(text),), source=source)


def _splice(target: InboxTarget, start: int, *texts: str, removed: int | None = None) -> InboxSpliced:
    inserted = tuple(_message(i, text) for i, text in enumerate(texts))
    return InboxSpliced(
        data=InboxSplicedData(target=target, start=start, inserted=inserted, removed_count=removed)
    )


def _header(model: str) -> RequestHeader:
    header = EpochHeader(config=HeaderConfig(provider="p", model=model))
    return RequestHeader(data=RequestHeaderData(header=header, reason="initial"))


class _Log:
    """Events fed to the rules with an `AgentState` fold, as a log does, keeping the stored events."""

    def __init__(self) -> None:
        self.state = AgentState()
        self.rules = LogState(folds=(self.state,))
        self.events: list[StoredEvent] = []

    def feed(self, event: Event) -> StoredEvent:
        stored = StoredEvent.from_event(event, seq=self.rules.next_seq, time=1)
        self.rules.feed(stored, data=event.data)
        self.events.append(stored)
        return stored

    def reread(self) -> AgentState:
        """The fold of the same events read back from their stored text."""
        state = AgentState()
        rules = LogState(folds=(state,))
        for event in self.events:
            rules.feed(
                StoredEvent(
                    type=event.type,
                    seq=event.seq,
                    time=event.time,
                    data=event.data,
                    surface_op=event.surface_op,
                    source_event_seqs=event.source_event_seqs,
                )
            )
        return state


def _texts(items: list[InboxItem]) -> list[str]:
    return [b.text for item in items for b in item.message.content if isinstance(b, TextBlock)]


def test_the_inbox_is_the_splices_folded_and_a_splice_outside_its_queue_is_refused() -> None:
    log = _Log()
    log.feed(_splice("next-turn", 0, "one", "two"))
    log.feed(_splice("next-step", 0, "steer"))
    log.feed(_splice("next-turn", 0, removed=1))
    assert _texts(log.state.inbox["next-turn"]) == ["two"]
    assert _texts(log.state.inbox["next-step"]) == ["steer"]
    assert msgspec.json.decode(log.state.inbox["next-step"][0].raw)["content"] == [
        {"type": "text", "text": "steer"}
    ]
    before = (log.rules.next_seq, {k: list(v) for k, v in log.state.inbox.items()})
    for bad in (
        _splice("next-turn", 2, "x"),
        _splice("next-step", 0, removed=2),
        _splice("next-turn", -1, "x"),
    ):
        with pytest.raises(LogRuleError) as refused:
            log.feed(bad)
        assert refused.value.rule == "inbox.splice"
        assert refused.value.seq == before[0]
    with pytest.raises(
        LogRuleError, match=r"start 2 removedCount 0 is outside the next-turn queue, which holds 1"
    ):
        log.feed(_splice("next-turn", 2, "x"))
    assert (log.rules.next_seq, {k: list(v) for k, v in log.state.inbox.items()}) == before
    reread = log.reread()
    assert {k: _texts(v) for k, v in reread.inbox.items()} == {
        k: _texts(v) for k, v in log.state.inbox.items()
    }


def test_the_header_context_jobs_and_the_snapshot_on_the_surface() -> None:
    log = _Log()
    first_header = _header("a")
    log.feed(first_header)
    log.feed(RequestContext(data=RequestContextData(provider="p", model="a", context_window=1000)))
    assert log.state.header_written
    assert log.state.header == first_header.data.header
    log.feed(SessionEndSeed(data=EmptyData()))
    assert not log.state.header_written, "a header before the last seed end was an earlier run's"
    log.feed(_header("b"))
    assert log.state.header_written
    assert log.state.request_context == RequestContextData(provider="p", model="a", context_window=1000)
    log.feed(JobSettled(data=JobSettledData(job_id="j1", status="completed", exit_code=0)))
    assert log.state.settled_jobs == {"j1"}
    assert log.state.snapshot_on(log.rules.surface.nodes) is None
    first = log.feed(UserMessageEvent(data=_message(1, "ctx one", snapshot=True), surface_op="append"))
    log.feed(UserMessageEvent(data=_message(2, "hello"), surface_op="append"))
    assert log.state.snapshot_on(log.rules.surface.nodes) == "ctx one"
    second = log.feed(UserMessageEvent(data=_message(3, "ctx two", snapshot=True), surface_op="append"))
    assert log.state.snapshot_on(log.rules.surface.nodes) == "ctx two"
    # a checkpoint shadowing the newer snapshot leaves the older one the newest on the surface
    log.feed(
        UserMessageEvent(
            data=_message(4, "checkpoint"),
            surface_op=Replace(start=second.seq, end=second.seq),
            source_event_seqs=(second.seq,),
        )
    )
    assert log.state.snapshot_on(log.rules.surface.nodes) == "ctx one"
    reread = log.reread()
    assert (reread.header, reread.header_written, reread.request_context, reread.settled_jobs) == (
        log.state.header,
        True,
        log.state.request_context,
        {"j1"},
    )
    assert reread.snapshot_on(log.rules.surface.nodes) == "ctx one"
    assert first.seq < second.seq


@pytest.mark.anyio
async def test_a_log_opened_with_the_fold_refuses_a_bad_splice_and_logs_nothing(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        session = store.create()
        state = AgentState()
        async with open_log(store, session.id, repair=False, folds=(state,)) as log:
            log.append(_splice("next-turn", 0, "one"))
            with pytest.raises(LogRuleError) as refused:
                log.append(_splice("next-turn", 0, removed=2))
            assert refused.value.rule == "inbox.splice"
            assert log.next_seq == 1
            assert _texts(state.inbox["next-turn"]) == ["one"]
        assert [e.type for e in store.events(session.id)] == [InboxSpliced.TAG]
        reopened = AgentState()
        async with open_log(store, session.id, folds=(reopened,)):
            assert _texts(reopened.inbox["next-turn"]) == ["one"]
            assert reopened.seed_end == 1


def test_an_import_checked_with_the_agents_fold_refuses_a_bad_splice(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        session = store.create()
        store.append_events(
            session.id, [StoredEvent.from_event(_splice("next-turn", 0, "one"), seq=0, time=1)]
        )
        out = io.BytesIO()
        export_jsonl(store, session.id, out)
        bad = StoredEvent.from_event(_splice("next-step", 0, removed=1), seq=1, time=2)
        path = tmp_path / "bad.jsonl"
        path.write_bytes(out.getvalue() + event_line(bad) + b"\n")
        before = len(store.sessions())
        with pytest.raises(LogFormatError) as refused:
            import_jsonl(store, path, folds=(AgentState(),))
        assert (refused.value.rule, refused.value.line) == ("inbox.splice", 3)
        assert len(store.sessions()) == before
        # the session layer alone has no notion of an inbox: without the agent's fold the log's rules accept it
        assert store.length(import_jsonl(store, path).id) == 2
