"""JSONL import/export: the recorded corpus round-trips, packed rows unpack to their seqs, bad files are refused
whole with their line and rule, and fields and types dsh does not model survive."""

from __future__ import annotations

import io
import json
from pathlib import Path

import msgspec
import pytest

from dsh.runtime.llm import ReasoningDelta
from dsh.runtime.session import (
    LogFormatError,
    SessionStoreProtocol,
    StoredEvent,
    UnsupportedVersionError,
    export_jsonl,
    import_jsonl,
    project,
    read_jsonl,
)

from .backends import Backend
from .conftest import HARNESS, HARNESS_LOGS, snapshot_rows


def _values(data: bytes) -> list[object]:
    return [msgspec.json.decode(line) for line in data.splitlines() if line.strip()]


def _export(store: SessionStoreProtocol, session_id: str, *, pack: bool = True) -> bytes:
    out = io.BytesIO()
    export_jsonl(store, session_id, out, pack=pack)
    return out.getvalue()


def test_the_corpus_is_all_here() -> None:
    assert len(HARNESS_LOGS) >= 15
    assert (HARNESS / "LICENSE").is_file()


@pytest.mark.parametrize("path", HARNESS_LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_import_export_reimport_gives_equal_events(store: SessionStoreProtocol, path: Path) -> None:
    first = import_jsonl(store, path)
    events = list(store.events(first.id))
    exported = _export(store, first.id)
    header, reread = read_jsonl(io.BytesIO(exported))
    assert list(reread) == events
    # the exported file is, value for value, the file recorded by the original (packed rows included)
    original = _values(path.read_bytes())
    assert _values(exported)[1:] == original[1:]
    assert header.header.created_at == original[0]["createdAt"]  # type: ignore[index]  # a header is an object
    assert [e.seq for e in events] == list(range(len(events)))


def test_import_reports_the_bytes_read_as_it_reads_them_ending_at_the_file_size(
    store: SessionStoreProtocol,
) -> None:
    path = HARNESS / "compaction-recovery" / "session.jsonl"
    read: list[int] = []
    info = import_jsonl(store, path, progress=read.append)
    data = path.read_bytes()
    assert len(read) == data.count(b"\n") >= 20  # one call per line: the file is read once, by the import
    assert read == sorted(set(read))  # strictly increasing
    assert read[0] == len(data.splitlines(keepends=True)[0])
    assert read[-1] == path.stat().st_size
    assert list(store.events(info.id)) == list(store.events(import_jsonl(store, path).id))


def test_a_refused_import_reports_progress_up_to_the_bad_line(
    store: SessionStoreProtocol, tmp_path: Path
) -> None:
    path = _write(tmp_path, HEADER, *TURN, b"not json")
    read: list[int] = []
    with pytest.raises(LogFormatError):
        import_jsonl(store, path, progress=read.append)
    assert read[-1] == path.stat().st_size
    assert len(read) == 2 + len(TURN)


@pytest.mark.parametrize("pack", [True, False])
def test_export_then_import_through_the_store(
    store: SessionStoreProtocol, tmp_path: Path, pack: bool
) -> None:
    info = import_jsonl(store, HARNESS / "packed-chunks" / "session.jsonl")
    out = tmp_path / "out.jsonl"
    out.write_bytes(_export(store, info.id, pack=pack))
    again = import_jsonl(store, out)
    assert list(store.events(again.id)) == list(store.events(info.id))
    lines = out.read_bytes().splitlines()
    assert any(b'"text-chunks"' in line for line in lines) is pack


def test_packed_rows_unpack_into_chunks_with_their_seqs_and_times(store: SessionStoreProtocol) -> None:
    path = HARNESS / "text-turn" / "session.jsonl"
    row = next(json.loads(line) for line in path.read_text().splitlines() if '"reasoning-chunks"' in line)
    info = import_jsonl(store, path)
    count = len(row["data"]["texts"])
    members = list(store.events(info.id, start=row["seq0"], stop=row["seq0"] + count))
    assert [e.seq for e in members] == list(range(row["seq0"], row["seq0"] + count))
    times = [row["time0"]]
    for gap in row["data"]["dt"]:
        times.append(times[-1] + gap)
    assert [e.time for e in members] == times
    texts = []
    for event in members:
        chunk = event.view().data.chunk  # type: ignore[union-attr]  # every member is an assistant/chunk
        assert isinstance(chunk, ReasoningDelta)  # reasoning rows unpack to reasoning deltas
        assert chunk.index == row["data"]["index"]
        texts.append(chunk.text)
    assert texts == row["data"]["texts"]


HEADER = b'{"type":"session","version":0,"id":"x","createdAt":5,"delegationDepth":0}'
TURN = [
    b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
    b'{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}',
    b'{"type":"user/message","seq":2,"time":1,"data":{"id":"u","role":"user","content":[{"type":"text","text":"hi"}],'
    b'"source":{"kind":"user"}},"surfaceOp":"append"}',
    b'{"type":"step/end","seq":3,"time":1,"data":{"turn":1,"step":1}}',
    b'{"type":"turn/end","seq":4,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}',
]


def _write(tmp_path: Path, *lines: bytes, end: bytes = b"\n") -> Path:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(lines) + end)
    return path


BAD_FILES = {
    "garbage": ([b"\x00\xffnot json at all"], 1, "header.json"),
    "missing header": (TURN, 1, "header.missing"),
    "empty file": ([b""], 1, "header.missing"),
    "truncated last line": ([HEADER, *TURN[:-1], TURN[-1][:30]], 6, "line.json"),
    "seq gap": ([HEADER, TURN[0], TURN[2]], 3, "seq.contiguous"),
    "seq not from zero": ([HEADER, TURN[1]], 2, "seq.contiguous"),
    "missing data": ([HEADER, b'{"type":"turn/start","seq":0,"time":1}'], 2, "envelope.required"),
    "bad data type": (
        [HEADER, b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":"one"}}'],
        2,
        "data.schema",
    ),
    "surface event without surfaceOp": (
        [HEADER, *TURN[:2], TURN[2].replace(b',"surfaceOp":"append"', b"")],
        4,
        "envelope.surface-op",
    ),
    "surfaceOp on a non-surface type": (
        [HEADER, TURN[0][:-1] + b',"surfaceOp":"append"}'],
        2,
        "envelope.surface-only",
    ),
    "unknown type with surfaceOp": (
        [HEADER, b'{"type":"plugin/thing","seq":0,"time":1,"data":{},"surfaceOp":"append"}'],
        2,
        "envelope.unknown-surface",
    ),
    "replace of a node that is not on the surface": (
        [
            HEADER,
            *TURN[:2],
            TURN[2].replace(b'"surfaceOp":"append"', b'"surfaceOp":{"op":"replace","start":0,"end":0}'),
        ],
        4,
        "surface.replace-range",
    ),
    "source seq not before the event": (
        [HEADER, *TURN[:2], TURN[2][:-1] + b',"sourceEventSeqs":[2]}'],
        4,
        "envelope.sources",
    ),
    "legacy header delta": (
        [HEADER, b'{"type":"request/header-delta","seq":0,"time":1,"data":{}}'],
        2,
        "envelope.legacy",
    ),
    "bad chunk": (
        [
            HEADER,
            *TURN[:2],
            b'{"type":"assistant/chunk","seq":2,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta"}}}',
        ],
        4,
        "data.schema",
    ),
    "assistant message without its model": (
        [
            HEADER,
            *TURN[:2],
            b'{"type":"assistant/message","seq":2,"time":1,"data":{"turn":1,"step":1,"message":{"id":"a",'
            b'"role":"assistant","content":[],"source":{"kind":"model","provider":"p"}}},"surfaceOp":"append"}',
        ],
        4,
        "data.schema",
    ),
    "unknown turn end kind": (
        [
            HEADER,
            TURN[0],
            b'{"type":"turn/end","seq":1,"time":1,"data":{"turn":1,"reason":{"kind":"paused"}}}',
        ],
        3,
        "data.schema",
    ),
    "blank line inside": ([HEADER, TURN[0], b"", TURN[1]], 3, "line.blank"),
    "malformed packed row": (
        [
            HEADER,
            b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[1,2],"texts":["a"]}}',
        ],
        2,
        "packed.dt",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_file_is_refused_with_its_line_and_rule_and_the_store_is_unchanged(
    store: SessionStoreProtocol, backend: Backend, tmp_path: Path, case: str
) -> None:
    import_jsonl(store, _write(tmp_path, HEADER, *TURN))  # something already in the store
    before = snapshot_rows(backend)
    lines, line, rule = BAD_FILES[case]
    path = _write(tmp_path, *lines, end=b"" if case == "truncated last line" else b"\n")
    with pytest.raises(LogFormatError) as raised:
        import_jsonl(store, path)
    assert (raised.value.line, raised.value.rule) == (line, rule)
    assert f"{path}:{line}:" in str(raised.value)
    assert snapshot_rows(backend) == before


def test_a_header_without_delegation_depth_reads_as_a_top_level_session(
    store: SessionStoreProtocol, tmp_path: Path
) -> None:
    # the original's web app and headless agent do not write it; its reader defaults it to 0
    path = _write(tmp_path, b'{"type":"session","version":0,"id":"w","createdAt":5,"agentPreset":"x"}', *TURN)
    info = import_jsonl(store, path)
    assert (info.delegation_depth, info.seed_length, info.cwd, info.parent_id) == (0, None, None, None)
    header = json.loads(_export(store, info.id).splitlines()[0])
    assert (header["delegationDepth"], header["agentPreset"]) == (
        0,
        "x",
    )  # written on disk, as the original does


@pytest.mark.parametrize(("version", "direction"), [(1, "newer"), (-1, "older")])
def test_a_wrong_version_is_refused_naming_the_direction(
    store: SessionStoreProtocol, backend: Backend, tmp_path: Path, version: int, direction: str
) -> None:
    before = snapshot_rows(backend)
    path = _write(tmp_path, HEADER.replace(b'"version":0', b'"version":%d' % version), *TURN)
    with pytest.raises(UnsupportedVersionError, match=direction) as raised:
        import_jsonl(store, path)
    assert raised.value.line == 1
    assert snapshot_rows(backend) == before


def test_unknown_fields_and_types_survive_and_unknown_types_never_project(
    store: SessionStoreProtocol, tmp_path: Path
) -> None:
    extra_user = TURN[2].replace(b'"role":"user"', b'"role":"user","future":{"x":[1,2.5,null]}')
    extra_envelope = TURN[3][:-1] + b',"note":"kept"}'
    opaque = b'{"type":"goal/set","seq":5,"time":9,"data":{"mode":"never","nested":[true]}}'
    header = HEADER[:-1] + b',"origin":"subagent","agentPreset":{"name":"p"}}'
    path = _write(tmp_path, header, TURN[0], TURN[1], extra_user, extra_envelope, TURN[4], opaque)
    info = import_jsonl(store, path)
    exported = _export(store, info.id)
    assert _values(exported) == [{**_values(header)[0], "id": info.id}, *_values(path.read_bytes())[1:]]  # type: ignore[dict-item]  # header is an object
    events = list(store.events(info.id))
    assert events[5].view().type == "goal/set"  # type: ignore[union-attr]  # an OpaqueEvent
    with_opaque = project(events)
    without = project(events[:5])
    assert with_opaque.messages == without.messages
    assert json.loads(with_opaque.messages[0].json)["future"] == {"x": [1, 2.5, None]}


def test_stored_events_equal_what_the_file_says(tmp_path: Path) -> None:
    header, events = read_jsonl(io.BytesIO(HEADER + b"\n" + b"\n".join(TURN) + b"\n"))
    first = next(events)
    assert first == StoredEvent(type="turn/start", seq=0, time=1, data='{"turn":1}')
    assert header.header.id == "x"
