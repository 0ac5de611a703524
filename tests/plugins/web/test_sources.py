"""The session page names where each user-role message came from (its source's kind as the log writes it), and the
session list's title is the person's first prompt, never a report, a notice or injected context."""

from __future__ import annotations

from pathlib import Path

from dsh.plugins.web._views import items, session_row
from dsh.runtime.llm import (
    MessageId,
    PluginSource,
    SubagentReportSource,
    TextBlock,
    UserMessage,
    UserMessageSource,
    UserSource,
)
from dsh.runtime.session import (
    CountingIds,
    FixedClock,
    SessionStore,
    StoredEvent,
    UserMessageEvent,
    import_jsonl,
)

REPORT_LOG = Path(__file__).parents[3] / "fixtures" / "harness" / "subagent-report" / "session.jsonl"


def _user(n: int, text: str, source: UserMessageSource) -> UserMessageEvent:
    message = UserMessage(id=MessageId(f"m{n}"), content=(TextBlock(text),), source=source)
    return UserMessageEvent(data=message, surface_op="append")


def test_a_subagent_report_is_labelled_as_one(tmp_path: Path) -> None:
    with SessionStore(
        tmp_path / "s.db", clock=FixedClock(1_790_000_000_000, 1), ids=CountingIds("s")
    ) as store:
        info = import_jsonl(store, REPORT_LOG)
        users = [i for i in items(store.events(info.id)) if i.kind == "user"]
    sources = [i.fields["source"] for i in users]
    assert "subagent-report" in sources, sources
    assert sources[0] == "user", sources


def test_the_list_title_is_the_first_prompt_not_injected_context(tmp_path: Path) -> None:
    with SessionStore(
        tmp_path / "s.db", clock=FixedClock(1_790_000_000_000, 1), ids=CountingIds("s")
    ) as store:
        info = store.create(cwd="/work")
        events = [
            _user(1, "runtime context: cwd /work", PluginSource(plugin="context", form="snapshot")),
            _user(2, "a report", SubagentReportSource(form="relay", sender_session_id="c1")),
            _user(3, "fix the tests please", UserSource()),
        ]
        stored = [StoredEvent.from_event(e, seq=n, time=1_790_000_000_000 + n) for n, e in enumerate(events)]
        store.append_events(info.id, stored)
        row = session_row(store, info)
    assert row.title == "fix the tests please"
