"""Typed report and notice sources through the log, import/export and replay: a background subagent's report and its
settled turn's notice carry the sender's session id (`SubagentReportSource`, `SubagentSettledSource`), a background
job's notice its job id (`JobNoticeSource`). An original log's and a dsh log's such sources decode typed, keep their
bytes through import -> store -> export, give the replay's inbox walk the sender and the job, and a re-run writes them
back as recorded."""

from __future__ import annotations

import io
import json
from pathlib import Path

import anyio
import pytest

from dsh.replay import golden_jsonl, load_scenario, read_log, rerun
from dsh.replay.script._inbox import Positions
from dsh.runtime.llm import (
    JobNoticeSource,
    OtherSource,
    SubagentReportSource,
    SubagentSettledSource,
    UserMessageSource,
)
from dsh.runtime.session import (
    CountingIds,
    Event,
    FixedClock,
    InboxSpliced,
    SessionStore,
    UserMessageEvent,
    export_jsonl,
    import_jsonl,
)

ROOT = Path(__file__).resolve().parents[2]
ORIGINAL_REPORT = ROOT / "fixtures" / "harness" / "subagent-report"
CONTINUABLE = ROOT / "fixtures" / "authored" / "continuable-child"
BASH_JOB = ROOT / "fixtures" / "authored" / "background-bash-job"

TYPED = (SubagentReportSource, SubagentSettledSource, JobNoticeSource)
Typed = type[SubagentReportSource | SubagentSettledSource | JobNoticeSource]


def _wire_sources(log: bytes) -> list[dict[str, object]]:
    """The `source` of every queued input and user message of a JSONL log, as written."""
    out: list[dict[str, object]] = []
    for line in log.splitlines()[1:]:
        event = json.loads(line)
        if event["type"] == InboxSpliced.TAG:
            out += [item["source"] for item in event["data"]["inserted"]]
        elif event["type"] == UserMessageEvent.TAG:
            out.append(event["data"]["source"])
    return [s for s in out if s["kind"] not in ("user", "tool", "plugin", "agent-instructions")]


def _typed_sources(path: Path) -> list[UserMessageSource]:
    """The typed source of every queued input and user message of the log at `path`, past kinds dsh had before."""
    out: list[UserMessageSource] = []
    for event, _ in read_log(path).events():
        view = event.view()
        if isinstance(view, InboxSpliced):
            out += [m.source for m in view.data.inserted]
        elif isinstance(view, UserMessageEvent):
            out.append(view.data.source)
    return [s for s in out if isinstance(s, (*TYPED, OtherSource))]


@pytest.mark.parametrize(
    ("directory", "expected"),
    [
        (
            ORIGINAL_REPORT,
            {
                (SubagentReportSource, "relay", "33333333-3333-4333-8333-333333333333", None),
                (SubagentSettledSource, "notice", "33333333-3333-4333-8333-333333333333", None),
            },
        ),
        (CONTINUABLE, {(SubagentSettledSource, "notice", "session-1.1", None)}),
        (BASH_JOB, {(JobNoticeSource, "notice", None, "job-1")}),
    ],
    ids=lambda v: v.name if isinstance(v, Path) else "",
)
def test_report_and_notice_sources_decode_typed_with_their_sender_or_job(
    directory: Path, expected: set[tuple[Typed, str, str | None, str | None]]
) -> None:
    sources = _typed_sources(directory / "session.jsonl")
    assert sources, "the log queues reports or notices"
    assert not [s for s in sources if isinstance(s, OtherSource)], "no report or notice reads as OtherSource"
    seen = {
        (
            type(s),
            s.form,
            getattr(s, "sender_session_id", None),
            s.job_id if isinstance(s, JobNoticeSource) else None,
        )
        for s in sources
        if isinstance(s, TYPED)
    }
    assert seen == expected
    # the replay's inbox walk reads the sender and the job from the typed source
    positions, deliveries = Positions(), []
    for event, _ in read_log(directory / "session.jsonl").events():
        view = event.view()
        if isinstance(view, Event):
            deliveries += positions.feed(view)
    typed = [d for d in deliveries if isinstance(d.message.source, TYPED)]
    assert {(d.kind, d.sender, d.key) for d in typed} == {
        (str(cls.__struct_config__.tag), sender, job) for cls, _, sender, job in expected
    }


@pytest.mark.parametrize("directory", [ORIGINAL_REPORT, CONTINUABLE, BASH_JOB], ids=lambda p: p.name)
def test_report_and_notice_sources_keep_their_bytes_through_import_and_export(
    directory: Path, tmp_path: Path
) -> None:
    path = directory / "session.jsonl"
    with SessionStore(tmp_path / "s.db", clock=FixedClock(0, 1), ids=CountingIds("i")) as store:
        imported = import_jsonl(store, path)
        spliced = [e.view() for e in store.events(imported.id, types=(InboxSpliced.TAG,))]
        assert any(isinstance(m.source, TYPED) for s in spliced for m in s.data.inserted)  # type: ignore[union-attr]
        out = io.BytesIO()
        export_jsonl(store, imported.id, out)
    exported, written = out.getvalue().splitlines()[1:], path.read_bytes().splitlines()[1:]
    assert [json.loads(line) for line in exported] == [json.loads(line) for line in written]
    # every line that carries a report or a notice, byte for byte (the original orders some envelope keys of
    # other events differently: the export writes dsh's order, an envelope matter outside the sources)
    carrying = [i for i, line in enumerate(written) if _wire_sources(b"\n" + line)]
    assert carrying
    assert [exported[i] for i in carrying] == [written[i] for i in carrying]


@pytest.mark.parametrize("directory", [ORIGINAL_REPORT, CONTINUABLE, BASH_JOB], ids=lambda p: p.name)
def test_a_rerun_writes_the_typed_sources_as_recorded(directory: Path) -> None:
    result = anyio.run(lambda: rerun(load_scenario(directory)))
    assert result.divergence is None, result.divergence
    # a subagent's report names its session: the recorded child's, and in the re-run the live child bound to it
    renamed = {
        json.loads((directory / f"session.{n}.jsonl").read_bytes().splitlines()[0])["id"]: info.id
        for n, (info, _) in enumerate(result.logs[1:], 1)
    }
    recorded_log = golden_jsonl((directory / "session.jsonl").read_bytes())
    for old, new in renamed.items():
        recorded_log = recorded_log.replace(old, new)
    recorded = _wire_sources(recorded_log.encode())
    written = _wire_sources(golden_jsonl(result.logs[0][1]).encode())
    assert written, "the re-run queued reports or notices"
    assert written == recorded
