"""The original's positional override sidecar (`replay.override.json`), read as written and turned into dsh's keyed
overrides. The document is either a bare list of entries, which replaces the derived script call by call, or
`{"patches": [{"at": N, "entry": {...}}]}`, which replaces the call at 0-based index N of the derived script (N equal
to its length appends one). An entry is `{"kind": "chunks", "chunks": [...]}`, `{"kind": "throw", "chunks": [...],
"message", "code"}` or `{"kind": "hang", "readyFile"?}`.

Positions become keys through the log: the Nth entry takes the key of the Nth call the log recorded. A position past
the recorded calls takes the key the loop would use next: after a stream that ends in tool calls, the next step; after
a throw, the same step's next attempt (a retry); after anything else, the next turn's first step. A hang serves the
recorded chunks of its call before it waits (what the stream delivered before it was cancelled), as dsh's `hang`
override does.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from dsh.runtime.llm import CallKey, Finish, FinishToolCalls, StreamChunk

from ..recordings._errors import OverrideError
from ._overrides import HangOverride, Override, Overrides, ReplaceOverride, ThrowOverride
from ._script import ScriptEntry

__all__ = ["positional_overrides"]


class _Entry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", tag_field="kind"):
    pass


class _Chunks(_Entry, frozen=True, tag="chunks"):
    chunks: tuple[StreamChunk, ...]


class _Throw(_Entry, frozen=True, tag="throw"):
    message: str
    code: str
    chunks: tuple[StreamChunk, ...] = ()


class _Hang(_Entry, frozen=True, tag="hang"):
    ready_file: str | None = None


_AnyEntry = _Chunks | _Throw | _Hang


class _Patch(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    at: int
    entry: _AnyEntry


class _Patches(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    patches: tuple[_Patch, ...]


_LIST = msgspec.json.Decoder(tuple[_AnyEntry, ...])
_PATCHES = msgspec.json.Decoder(_Patches)


def _after(call: CallKey, entry: _AnyEntry | ScriptEntry) -> CallKey:
    """The key of the call the loop makes after `entry` at `call` (see the module)."""
    if isinstance(entry, _Throw) or (isinstance(entry, ScriptEntry) and entry.end is not None):
        return CallKey(turn=call.turn, step=call.step, attempt=call.attempt + 1)
    chunks = entry.chunks if isinstance(entry, _Chunks | ScriptEntry) else ()
    last = chunks[-1] if chunks else None
    if isinstance(last, Finish) and isinstance(last.reason, FinishToolCalls):
        return CallKey(turn=call.turn, step=call.step + 1, attempt=1)
    return CallKey(turn=call.turn + 1, step=1, attempt=1)


def _override(entry: _AnyEntry, call: CallKey) -> Override:
    turn, step, attempt = call.turn, call.step, call.attempt
    if isinstance(entry, _Chunks):
        return ReplaceOverride(turn=turn, step=step, attempt=attempt, chunks=entry.chunks)
    if isinstance(entry, _Throw):
        return ThrowOverride(
            turn=turn, step=step, attempt=attempt, code=entry.code, message=entry.message, chunks=entry.chunks
        )
    return HangOverride(turn=turn, step=step, attempt=attempt, ready_file=entry.ready_file)


def positional_overrides(data: bytes, *, file: str, derived: tuple[ScriptEntry, ...]) -> Overrides:
    """The keyed `Overrides` the positional document `data` stands for, over the model calls `derived` from the
    log it overrides (compaction calls keep their own entries: positions count model calls)."""
    calls = [entry for entry in derived if entry.kind == "model"]
    form: Literal["list", "patches"] = "list" if data.lstrip().startswith(b"[") else "patches"
    try:
        if form == "list":
            placed = list(enumerate(_LIST.decode(data)))
        else:
            placed = [(patch.at, patch.entry) for patch in _PATCHES.decode(data).patches]
    except msgspec.DecodeError as error:
        raise OverrideError(
            f"{error}; the original's replay.override.json is a list of entries "
            '({"kind": "chunks"|"throw"|"hang", ...}) or {"patches": [{"at": N, "entry": {...}}]}',
            file=file,
        ) from None
    ats = [at for at, _ in placed]
    if any(at < 0 for at in ats):
        raise OverrideError(f"patch positions count from 0: {sorted(ats)}", file=file)
    if len(set(ats)) != len(ats):
        raise OverrideError(
            f"patch positions repeat: {sorted(ats)}; each call index may be patched once", file=file
        )
    if form == "patches" and max(ats, default=0) > len(calls):
        raise OverrideError(
            f"patch at {max(ats)} is past the derived script's {len(calls)} calls (at = {len(calls)} appends)",
            file=file,
        )
    by_position: dict[int, _AnyEntry] = dict(placed)
    items: list[Override] = []
    previous: tuple[CallKey, _AnyEntry | ScriptEntry] | None = None
    for position in range(max(ats, default=-1) + 1):
        if position < len(calls):
            call = calls[position].call
        elif previous is not None:
            call = _after(*previous)
        else:
            call = CallKey(turn=1, step=1, attempt=1)
        entry = by_position.get(position)
        if entry is not None:
            items.append(_override(entry, call))
            previous = (call, entry)
        else:
            previous = (call, calls[position])
    # A list replaces the whole script: recorded calls past its end are not served.
    return Overrides(file, tuple(items), keep_calls=len(placed) if form == "list" else None)
