"""The override sidecar (`override.json`): what a log alone cannot replay, keyed like the script.

```json
{"overrides": [
  {"op": "hang",    "turn": 1, "step": 1, "readyFile": ".dsh-stream-ready"},
  {"op": "throw",   "turn": 2, "step": 1, "attempt": 1, "code": "AUTH", "message": "simulated 401", "chunks": []},
  {"op": "replace", "turn": 3, "step": 1, "chunks": [{"type": "finish", "reason": {"kind": "stop"}}]},
  {"op": "patch",   "turn": 3, "step": 2, "index": 4, "chunk": {"type": "text-delta", "index": 0, "text": "hi"}}
]}
```

Every override names its target by `turn`, `step`, `attempt` (default 1) and `kind` (`model`, the default, or
`compaction`; a recorded title call is served as recorded). The schema is strict (unknown keys, a bad chunk, a non-positive key are refused at load, naming the
override's index) and so is applying it (a patch of an entry that was not recorded, an index past the end).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import msgspec

from dsh.runtime.llm import BlockAssembler, CallKey, ChunkProtocolError, Finish, StreamChunk

from ..recordings._errors import OverrideError, format_call
from ..recordings._source import LogInfo
from ._script import EntryKind, Hang, ScriptEntry, Throw

__all__ = [
    "HangOverride",
    "Override",
    "OverrideFile",
    "Overrides",
    "PatchOverride",
    "ReplaceOverride",
    "ThrowOverride",
    "load_overrides",
    "parse_overrides",
]


class _Target(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel", tag_field="op"
):
    turn: int
    step: int
    attempt: int = 1
    kind: Literal["model", "compaction"] = "model"  # a title call is served as recorded, never overridden

    @property
    def call(self) -> CallKey:
        purpose = "compaction" if self.kind == "compaction" else "step"
        return CallKey(turn=self.turn, step=self.step, attempt=self.attempt, purpose=purpose)


class ReplaceOverride(_Target, frozen=True, kw_only=True, tag="replace"):
    """The entry's chunks are these: a whole stream ending in one `finish`. Adds the entry if none was recorded."""

    chunks: tuple[StreamChunk, ...]


class PatchOverride(_Target, frozen=True, kw_only=True, tag="patch"):
    """Chunk `index` of the recorded entry becomes `chunk`; `index` = the chunk count appends it (so a stream cut
    off before its finish can be finished)."""

    index: int
    chunk: StreamChunk


class ThrowOverride(_Target, frozen=True, kw_only=True, tag="throw"):
    """Serve `chunks` (default: the recorded chunks before the finish), then fail with `code` and `message`."""

    code: str
    message: str
    chunks: tuple[StreamChunk, ...] | None = None


class HangOverride(_Target, frozen=True, kw_only=True, tag="hang"):
    """Serve `chunks` (default: the recorded chunks before the finish), touch `ready_file` (wire `readyFile`; a
    relative path is resolved against the live session's cwd) and wait until the call is cancelled."""

    ready_file: str | None = None
    chunks: tuple[StreamChunk, ...] | None = None


Override = ReplaceOverride | PatchOverride | ThrowOverride | HangOverride


class OverrideFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The file: `{"overrides": [...]}`."""

    overrides: tuple[Override, ...]


_FILE = msgspec.json.Decoder(OverrideFile)
_KIND_ORDER = {"compaction": 0, "model": 1, "title": 2}


def _order(call: CallKey, kind: EntryKind) -> tuple[int, int, int, int]:
    return (call.turn, call.step, call.attempt, _KIND_ORDER[kind])


def _check_stream(chunks: tuple[StreamChunk, ...], *, complete: bool) -> str | None:
    """Why `chunks` is not a valid stream (complete: ending in its finish; else: a prefix with no finish)."""
    assembler = BlockAssembler()
    try:
        for chunk in chunks:
            assembler.feed(chunk)
    except ChunkProtocolError as error:
        return str(error)
    if complete and not assembler.done:
        return "the chunks must end with a finish chunk"
    if not complete and assembler.done:
        return "the chunks served before a throw or hang must not hold a finish chunk"
    return None


@dataclass(frozen=True, slots=True)
class Overrides:
    """Overrides read from `file` (for messages), in file order. `keep_calls`, when set, drops the recorded model
    calls past that many before the overrides apply (the original's whole-script replacement, `_positional`)."""

    file: str
    items: tuple[Override, ...]
    keep_calls: int | None = None

    def __post_init__(self) -> None:
        targets: dict[tuple[int, int, int, str], list[int]] = {}
        for index, item in enumerate(self.items):
            if min(item.turn, item.step, item.attempt) < 1:
                self._fail("turn, step and attempt count from 1", index)
            problem: str | None = None
            if isinstance(item, ReplaceOverride):
                problem = _check_stream(item.chunks, complete=True)
            elif isinstance(item, PatchOverride):
                if item.index < 0:
                    problem = "index counts from 0"
            else:
                if isinstance(item, ThrowOverride) and not (item.code and item.message):
                    problem = "a throw needs a non-empty code and message"
                elif item.chunks is not None:
                    problem = _check_stream(item.chunks, complete=False)
            if problem is not None:
                self._fail(problem, index)
            targets.setdefault((item.turn, item.step, item.attempt, item.kind), []).append(index)
        for (turn, step, attempt, kind), indexes in targets.items():
            items = [self.items[i] for i in indexes]
            patches = [i for i in items if isinstance(i, PatchOverride)]
            if len(items) > 1 and len(patches) != len(items):
                self._fail(
                    f"overrides {indexes} all target {kind} call ({turn},{step},{attempt}); only patches of "
                    "distinct chunks may share a target",
                    indexes[1],
                )
            seen: set[int] = set()
            for position, patch in zip(indexes, patches, strict=False):
                if patch.index in seen:
                    self._fail(
                        f"chunk {patch.index} of call ({turn},{step},{attempt}) is patched twice", position
                    )
                seen.add(patch.index)

    def _fail(self, message: str, index: int | None = None) -> None:
        raise OverrideError(message, file=self.file, index=index)

    def apply(self, entries: tuple[ScriptEntry, ...], log: LogInfo) -> tuple[ScriptEntry, ...]:
        """The entries with every override applied (each entry an override adds goes to its key's place)."""
        result = list(entries)
        if self.keep_calls is not None:
            models = [entry for entry in result if entry.kind == "model"]
            dropped = {id(entry) for entry in models[self.keep_calls :]}
            result = [entry for entry in result if id(entry) not in dropped]
        patched: set[int] = set()
        for index, item in enumerate(self.items):
            call = item.call
            matches = [j for j, entry in enumerate(result) if entry.call == call and entry.kind == item.kind]
            if len(matches) > 1:
                self._fail(
                    f"{log.name} holds {len(matches)} {item.kind} entries at {format_call(call)}; an override "
                    "cannot tell them apart",
                    index,
                )
            current = result[matches[0]] if matches else None
            place = f"{self.file}: overrides[{index}]"
            if isinstance(item, PatchOverride):
                if current is None:
                    recorded = ", ".join(f"{format_call(e.call)} {e.kind}" for e in result) or "none"
                    self._fail(
                        f"{log.name} has no {item.kind} entry at {format_call(call)} to patch; recorded: {recorded}",
                        index,
                    )
                assert current is not None
                chunks = list(current.chunks)
                if item.index > len(chunks):
                    self._fail(
                        f"chunk index {item.index} is past the end of {format_call(call)}, which has "
                        f"{len(chunks)} chunks (index {len(chunks)} appends)",
                        index,
                    )
                if item.index == len(chunks):
                    chunks.append(item.chunk)
                else:
                    chunks[item.index] = item.chunk
                result[matches[0]] = dataclasses.replace(current, chunks=tuple(chunks), override="patch")
                patched.add(index)
                continue
            if isinstance(item, ReplaceOverride):
                entry = ScriptEntry(call, item.kind, item.chunks, place, override="replace")
            else:
                prefix = item.chunks if item.chunks is not None else _recorded_prefix(current)
                problem = _check_stream(prefix, complete=False)
                if problem is not None:
                    self._fail(
                        f"the recorded chunks of {format_call(call)} cannot be served: {problem}", index
                    )
                end: Throw | Hang
                if isinstance(item, ThrowOverride):
                    end, op = Throw(item.code, item.message), "throw"
                else:
                    end, op = Hang(item.ready_file), "hang"
                entry = ScriptEntry(call, item.kind, prefix, place, end=end, override=op)
            if matches:
                result[matches[0]] = entry
            else:
                at = sum(1 for e in result if _order(e.call, e.kind) <= _order(call, item.kind))
                result.insert(at, entry)
        for index in sorted(patched):
            item = self.items[index]
            entry = next(e for e in result if e.call == item.call and e.kind == item.kind)
            problem = _check_stream(entry.chunks, complete=True)
            if problem is not None:
                self._fail(
                    f"after patching, call {format_call(item.call)} is not a valid stream: {problem}", index
                )
        return tuple(result)


def _recorded_prefix(entry: ScriptEntry | None) -> tuple[StreamChunk, ...]:
    if entry is None:
        return ()
    chunks = entry.chunks
    return chunks[:-1] if chunks and isinstance(chunks[-1], Finish) else chunks


_CHUNK_KEYS: dict[str, frozenset[str]] = {
    str(cls.__struct_config__.tag): frozenset({"type", *(f.encode_name for f in msgspec.structs.fields(cls))})
    for cls in get_args(StreamChunk)
}


def _unknown_chunk_key(items: object) -> str | None:
    """The first key of an override's chunk that its type does not have (the log's chunk types accept fields they
    do not model, since the original adds some; a hand-written override is held to the exact key set)."""
    if not isinstance(items, dict) or not isinstance(items.get("overrides"), list):
        return None
    for index, item in enumerate(items["overrides"]):
        if not isinstance(item, dict):
            continue
        listed = item.get("chunks")
        chunks: list[object] = listed if isinstance(listed, list) else [item.get("chunk")]
        for chunk in chunks:
            if not isinstance(chunk, dict) or chunk.get("type") not in _CHUNK_KEYS:
                continue
            extra = sorted(set(chunk) - _CHUNK_KEYS[chunk["type"]])
            if extra:
                return f"Object contains unknown field `{extra[0]}` - at `$.overrides[{index}]` ({chunk['type']} chunk)"
    return None


def parse_overrides(data: bytes | str, *, file: str = "override.json") -> Overrides:
    """Overrides from the file's text; `OverrideError` names the file and what is wrong."""
    try:
        parsed = _FILE.decode(data)
        unknown = _unknown_chunk_key(msgspec.json.decode(data))
        if unknown is not None:
            raise OverrideError(
                f"{unknown}; a chunk holds exactly its type's fields (see replay/README.md)", file=file
            )
    except msgspec.DecodeError as error:
        raise OverrideError(
            f'{error}; expected {{"overrides": [{{"op": "replace"|"patch"|"throw"|"hang", "turn", '
            '"step", ...}]} (see replay/README.md)',
            file=file,
        ) from None
    return Overrides(file, parsed.overrides)


def load_overrides(path: str | Path) -> Overrides:
    """Read an override file."""
    path = Path(path)
    return parse_overrides(path.read_bytes(), file=str(path))
