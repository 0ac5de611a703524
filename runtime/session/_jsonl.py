"""The original's JSONL format, version 0: reading (header, events, packed chunk rows; every rule checked, errors
name the line) and writing (header, events verbatim, runs of deltas packed into `*-chunks` rows)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from dsh.runtime.jsonlines import JsonLimits, JsonLineError, check_value, read_lines
from dsh.runtime.llm import CallId, ReasoningDelta, TextDelta, ToolCallDelta

from ._errors import LogFormatError, LogRuleError, UnsupportedVersionError
from ._events import (
    FORMAT_VERSION,
    AssistantChunk,
    AssistantChunkData,
    SessionHeader,
    StoredEvent,
    SurfaceOp,
    encode_data,
)
from ._fold import LogFold
from ._rules import LogState
from .store._base import SessionInfo, SpawnedBy
from .store._protocol import SessionStoreProtocol

__all__ = [
    "ParsedHeader",
    "event_line",
    "export_jsonl",
    "header_line",
    "import_jsonl",
    "read_jsonl",
    "write_jsonl",
]

_FIELDS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_HEADER = msgspec.json.Decoder(SessionHeader)
_SPAWNED = msgspec.json.Decoder(SpawnedBy)
_STR = msgspec.json.Decoder(str)
_INT = msgspec.json.Decoder(int)
_BOOL = msgspec.json.Decoder(bool)
_SEQS = msgspec.json.Decoder(tuple[int, ...])
_OP = msgspec.json.Decoder(SurfaceOp)
_ENC = msgspec.json.Encoder()

_HEADER_KEYS = frozenset(
    {
        "type",
        "version",
        "id",
        "createdAt",
        "cwd",
        "parentSession",
        "seedLength",
        "delegationDepth",
        "spawnedBy",
    }
)
_ENVELOPE = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable")
MIN_PACK = 3


class _PackedText(msgspec.Struct, forbid_unknown_fields=True):
    turn: int
    step: int
    index: int
    dt: list[int]
    texts: list[str]


class _PackedTool(msgspec.Struct, forbid_unknown_fields=True):
    turn: int
    step: int
    index: int
    dt: list[int]
    id: str
    args: list[str]
    name: str | None = None


class _PackedRow(msgspec.Struct, forbid_unknown_fields=True):
    type: str
    seq0: int
    time0: int
    data: msgspec.Raw


_ROW = msgspec.json.Decoder(_PackedRow)
_PACKED: dict[str, msgspec.json.Decoder[Any]] = {
    "text-chunks": msgspec.json.Decoder(_PackedText),
    "reasoning-chunks": msgspec.json.Decoder(_PackedText),
    "tool-call-chunks": msgspec.json.Decoder(_PackedTool),
}


@dataclass(frozen=True, slots=True)
class ParsedHeader:
    """The header line: what `sessions` stores of it, and the keys dsh does not model (JSON object text)."""

    header: SessionHeader
    spawned_by: SpawnedBy | None
    extra: str | None


def _fail(message: str, rule: str, line: int, file: str) -> LogFormatError:
    return LogFormatError(message, rule=rule, line=line, file=file)


def _bounded(raw: bytes, line: int, file: str, limits: JsonLimits) -> None:
    """Refuse a line nested deeper than the limit or holding an integer outside 64 bits, before it is decoded."""
    try:
        check_value(raw, max_depth=limits.max_depth, line=line)
    except JsonLineError as error:
        raise _fail(error.reason, error.rule, line, file) from None


def _not_utf8(error: UnicodeDecodeError) -> str:
    return f"the line is not UTF-8 ({error.reason}: byte 0x{error.object[error.start]:02x})"


def _parse_header(raw: bytes, file: str, limits: JsonLimits) -> ParsedHeader:
    _bounded(raw, 1, file, limits)
    try:
        return _header_fields(raw, file)
    except UnicodeDecodeError as error:
        raise _fail(_not_utf8(error), "line.utf8", 1, file) from None


def _header_fields(raw: bytes, file: str) -> ParsedHeader:
    try:
        fields = _FIELDS.decode(raw)
    except msgspec.DecodeError as error:
        raise _fail(f"the header is not a JSON object: {error}", "header.json", 1, file) from None
    if "type" not in fields or _decode_or_none(_STR, fields["type"]) != "session":
        raise _fail(
            'the first line must be the session header {"type":"session","version":0,...}',
            "header.missing",
            1,
            file,
        )
    version = _decode_or_none(_INT, fields.get("version"))
    if version is None:
        raise _fail("the header's version must be an integer", "header.version", 1, file)
    if version != FORMAT_VERSION:
        direction = "newer" if version > FORMAT_VERSION else "older"
        raise UnsupportedVersionError(
            f"format version {version} is {direction} than the version dsh reads ({FORMAT_VERSION})",
            rule="header.version",
            line=1,
            file=file,
        )
    try:
        header = _HEADER.decode(raw)
        spawned = _SPAWNED.decode(fields["spawnedBy"]) if "spawnedBy" in fields else None
    except msgspec.ValidationError as error:
        raise _fail(f"bad header: {error}", "header.schema", 1, file) from None
    extra = {k: v for k, v in fields.items() if k not in _HEADER_KEYS}
    return ParsedHeader(header, spawned, _ENC.encode(extra).decode() if extra else None)


def _decode_or_none(decoder: msgspec.json.Decoder[Any], raw: msgspec.Raw | None) -> Any:
    if raw is None:
        return None
    try:
        return decoder.decode(raw)
    except msgspec.DecodeError:
        return None


def _parse_event(fields: dict[str, msgspec.Raw], line: int, file: str) -> StoredEvent:
    for key in ("type", "seq", "time", "data"):
        if key not in fields:
            raise _fail(f'an event needs "{key}"', "envelope.required", line, file)
    try:
        kind = _STR.decode(fields["type"])
        seq = _INT.decode(fields["seq"])
        time = _INT.decode(fields["time"])
        op = _OP.decode(fields["surfaceOp"]) if "surfaceOp" in fields else None
        sources = _SEQS.decode(fields["sourceEventSeqs"]) if "sourceEventSeqs" in fields else None
        ignorable = _BOOL.decode(fields["ignorable"]) if "ignorable" in fields else None
    except msgspec.ValidationError as error:
        raise _fail(f"bad envelope: {error}", "envelope.schema", line, file) from None
    extra = {k: v for k, v in fields.items() if k not in _ENVELOPE}
    return StoredEvent(
        type=kind,
        seq=seq,
        time=time,
        data=bytes(fields["data"]).decode(),
        surface_op=op,
        source_event_seqs=sources,
        ignorable=ignorable,
        extra=_ENC.encode(extra).decode() if extra else None,
    )


def _unpack(kind: str, raw: bytes, line: int, file: str) -> list[StoredEvent]:
    try:
        row = _ROW.decode(raw)
        packed = _PACKED[kind].decode(row.data)
    except msgspec.DecodeError as error:
        raise _fail(f"malformed {kind} row: {error}", "packed.schema", line, file) from None
    members: list[str] = packed.texts if isinstance(packed, _PackedText) else packed.args
    if not members or len(packed.dt) != len(members) - 1:
        raise _fail(
            f"a {kind} row needs one dt per member after the first: {len(members)} members, {len(packed.dt)} dt",
            "packed.dt",
            line,
            file,
        )
    events: list[StoredEvent] = []
    time = row.time0
    for k, member in enumerate(members):
        if k:
            time += packed.dt[k - 1]
        chunk: TextDelta | ReasoningDelta | ToolCallDelta
        if isinstance(packed, _PackedTool):
            chunk = ToolCallDelta(
                index=packed.index, id=CallId(packed.id), name=packed.name, arguments_delta=member
            )
        elif kind == "text-chunks":
            chunk = TextDelta(index=packed.index, text=member)
        else:
            chunk = ReasoningDelta(index=packed.index, text=member)
        event = AssistantChunk(data=AssistantChunkData(turn=packed.turn, step=packed.step, chunk=chunk))
        events.append(StoredEvent.from_event(event, seq=row.seq0 + k, time=time))
    return events


def read_jsonl(
    lines: Iterable[bytes],
    *,
    file: str = "",
    limits: JsonLimits | None = None,
    check_chunks: bool = False,
    folds: Sequence[LogFold] = (),
) -> tuple[ParsedHeader, Iterator[StoredEvent]]:
    """Parse a log: the header now, the events lazily. Every event is checked against the log's rules as it is
    yielded; the first broken rule raises `LogFormatError` naming the line (and the rule). Each line is held to
    `limits` (nesting depth, 64-bit integers) before it is decoded, and must be UTF-8. `check_chunks` also decodes
    every chunk (import does: the store must hold no chunk its readers refuse); a reader that decodes the chunks
    itself (replay) leaves it off and reports a bad one in its own terms. `folds` are fed the events as the rules
    are (`LogFold`): a fold's refusal is a broken rule like the others."""
    limits = limits or JsonLimits()
    source = iter(lines)
    first = next(source, None)
    if first is None or not first.strip():
        raise _fail("the file is empty: expected the session header", "header.missing", 1, file)
    header = _parse_header(first, file, limits)
    return header, _events(source, header, file, limits, check_chunks, folds)


def _events(
    source: Iterator[bytes],
    header: ParsedHeader,
    file: str,
    limits: JsonLimits,
    check_chunks: bool,
    folds: Sequence[LogFold],
) -> Iterator[StoredEvent]:
    state = LogState(folds=folds)
    blank: int | None = None
    for number, raw in enumerate(source, 2):
        if not raw.strip():
            blank = number
            continue
        if blank is not None:
            raise _fail("blank line inside the log", "line.blank", blank, file)
        _bounded(raw, number, file, limits)
        try:
            events = _parse_line(raw, number, file)
        except UnicodeDecodeError as error:
            raise _fail(_not_utf8(error), "line.utf8", number, file) from None
        for event in events:
            try:
                state.feed(event)
                if check_chunks and event.typed is None and event.type == AssistantChunk.TAG:
                    event.view()
            except LogRuleError as error:
                raise _fail(error.reason, error.rule, number, file) from None
            except msgspec.DecodeError as error:
                raise _fail(f"bad {event.type} data: {error}", "data.schema", number, file) from None
            yield event
    seed = header.header.seed_length
    if seed is not None and not 0 <= seed <= state.next_seq:
        raise _fail(
            f"seedLength {seed} is outside the log (it has {state.next_seq} events)",
            "header.seed-length",
            1,
            file,
        )


def _parse_line(raw: bytes, number: int, file: str) -> list[StoredEvent]:
    try:
        fields = _FIELDS.decode(raw)
    except msgspec.DecodeError as error:
        raise _fail(
            f"not a JSON object (truncated or corrupt line?): {error}", "line.json", number, file
        ) from None
    kind = _decode_or_none(_STR, fields.get("type"))
    return _unpack(kind, raw, number, file) if kind in _PACKED else [_parse_event(fields, number, file)]


def header_line(info: SessionInfo) -> bytes:
    """The header line of a stored session."""
    header: dict[str, Any] = {
        "type": "session",
        "version": FORMAT_VERSION,
        "id": info.id,
        "createdAt": info.created_at,
    }
    if info.cwd is not None:
        header["cwd"] = info.cwd
    if info.parent_id is not None:
        header["parentSession"] = info.parent_id
    if info.seed_length is not None:
        header["seedLength"] = info.seed_length
    if info.spawned_by is not None:
        header["spawnedBy"] = info.spawned_by
    if info.header_extra:
        header.update(msgspec.json.decode(info.header_extra))
    header["delegationDepth"] = info.delegation_depth
    return _ENC.encode(header)


def event_line(event: StoredEvent) -> bytes:
    """One event as a verbatim JSONL line (no newline)."""
    parts = [
        b'{"type":',
        _ENC.encode(event.type),
        b',"seq":%d,"time":%d,"data":' % (event.seq, event.time),
        event.data.encode(),
    ]
    if event.surface_op is not None:
        parts += [b',"surfaceOp":', _ENC.encode(event.surface_op)]
    if event.source_event_seqs is not None:
        parts += [b',"sourceEventSeqs":', _ENC.encode(event.source_event_seqs)]
    if event.ignorable is not None:
        parts += [b',"ignorable":', b"true" if event.ignorable else b"false"]
    if event.extra:
        parts += [b",", event.extra.encode()[1:-1]]
    parts.append(b"}")
    return b"".join(parts)


def _pack_key(event: StoredEvent) -> tuple[Any, ...] | None:
    """What a delta must share with its run to be packed, or None if it cannot be packed losslessly."""
    if (
        event.type != AssistantChunk.TAG
        or event.surface_op is not None
        or event.source_event_seqs is not None
        or event.ignorable is not None
        or event.extra is not None
    ):
        return None
    try:
        view = event.view()
    except msgspec.DecodeError:
        return None
    data = view.data
    if not isinstance(data, AssistantChunkData):
        return None
    chunk = data.chunk
    if not isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta) or encode_data(data) != event.data:
        return None
    if isinstance(chunk, ToolCallDelta):
        return ("tool-call-chunks", data.turn, data.step, chunk.index, chunk.id, chunk.name)
    kind = "text-chunks" if isinstance(chunk, TextDelta) else "reasoning-chunks"
    return (kind, data.turn, data.step, chunk.index)


def _packed_line(key: tuple[Any, ...], run: list[StoredEvent]) -> bytes:
    kind, turn, step, index = key[:4]
    dt = [b.time - a.time for a, b in itertools.pairwise(run)]
    members = []
    for event in run:
        delta = event.view().data
        assert isinstance(delta, AssistantChunkData), "runs hold assistant/chunk events only"
        chunk = delta.chunk
        members.append(chunk.arguments_delta if isinstance(chunk, ToolCallDelta) else chunk.text)  # type: ignore[union-attr]  # runs hold deltas only
    data: dict[str, Any] = {"turn": turn, "step": step, "index": index, "dt": dt}
    if kind == "tool-call-chunks":
        data["id"] = key[4]
        if key[5] is not None:
            data["name"] = key[5]
        data["args"] = members
    else:
        data["texts"] = members
    return _ENC.encode({"type": kind, "seq0": run[0].seq, "time0": run[0].time, "data": data})


def write_jsonl(info: SessionInfo, events: Iterable[StoredEvent], *, pack: bool = True) -> Iterator[bytes]:
    """The log as JSONL lines (each ending in a newline): the header, then the events; with `pack`, runs of at least
    three deltas of one block become a packed row, as the original writes them."""
    yield header_line(info) + b"\n"
    run: list[StoredEvent] = []
    run_key: tuple[Any, ...] | None = None
    for event in events:
        key = _pack_key(event) if pack else None
        if key is not None and key == run_key:
            run.append(event)
            continue
        yield from _flush_run(run_key, run)
        run, run_key = ([event], key) if key is not None else ([], None)
        if key is None:
            yield event_line(event) + b"\n"
    yield from _flush_run(run_key, run)


def _flush_run(key: tuple[Any, ...] | None, run: list[StoredEvent]) -> Iterator[bytes]:
    if key is not None and len(run) >= MIN_PACK:
        yield _packed_line(key, run) + b"\n"
    else:
        for event in run:
            yield event_line(event) + b"\n"


def _lines(path: Path, progress: Callable[[int], None] | None, max_line: int) -> Iterator[bytes]:
    """The file's lines, each refused once it passes `max_line` bytes (so no more than that is ever held)."""
    with path.open("rb") as handle:
        read = 0
        try:
            for line in read_lines(handle, max_line=max_line):
                if progress is not None:
                    read += len(line)
                    progress(read)
                yield line
        except JsonLineError as error:
            raise LogFormatError(error.reason, rule=error.rule, line=error.line, file=str(path)) from None


def import_jsonl(
    store: SessionStoreProtocol,
    path: str | Path,
    *,
    progress: Callable[[int], None] | None = None,
    limits: JsonLimits | None = None,
    folds: Sequence[LogFold] = (),
) -> SessionInfo:
    """Import a JSONL log as a new session (a fresh id; the file's id is kept as `imported_from`). The whole file
    is checked inside one transaction: a bad file raises `LogFormatError` and leaves the store unchanged.

    `progress`, when given, is called with the bytes read so far as each line is read (the file is read once, as
    the import consumes it): increasing counts that end at the file's size once the whole file is in. It is called
    once per line, so a caller drawing a bar should throttle its own redraws.

    `limits` bounds what one line may hold (default `JsonLimits()`: 50 MiB, nesting 128): a longer line is refused
    with its number before it is read whole. `folds` check the events as the log's rules do (`read_jsonl`): the CLI
    passes the agent's, so a log an agent could not open is refused at the door."""
    path = Path(path)
    limits = limits or JsonLimits()
    parsed, events = read_jsonl(
        _lines(path, progress, limits.max_line), file=str(path), limits=limits, check_chunks=True, folds=folds
    )
    header = parsed.header
    info = SessionInfo(
        id=store.ids.new_session_id(),
        created_at=header.created_at,
        cwd=header.cwd,
        parent_id=header.parent_session,
        seed_length=header.seed_length,
        delegation_depth=header.delegation_depth,
        spawned_by=parsed.spawned_by,
        imported_from=header.id,
        header_extra=parsed.extra,
    )
    return store.import_session(info, events)


def export_jsonl(store: SessionStoreProtocol, session_id: str, out: BinaryIO, *, pack: bool = True) -> int:
    """Write the session's full log (fork prefix materialised) to `out`; returns the number of events."""
    info = store.info(session_id)
    count = 0

    def counted() -> Iterator[StoredEvent]:
        nonlocal count
        for event in store.events(session_id):
            count += 1
            yield event

    for line in write_jsonl(info, counted(), pack=pack):
        out.write(line)
    return count
