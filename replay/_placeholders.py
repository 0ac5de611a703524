"""The `{{cwd}}` placeholder: the original wrote it in recorded text (tool arguments, answers) where the recording
session's workspace path was; replay serves the live workspace path in its place. Deltas are rewritten block by
block, so a placeholder split across two deltas is replaced whole and every `block-end` still agrees with its
deltas."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import msgspec

from dsh.runtime.llm import (
    BlockEnd,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
)

__all__ = ["CWD_PLACEHOLDER", "split_like", "with_cwd"]

CWD_PLACEHOLDER = "{{cwd}}"

_Delta = TextDelta | ReasoningDelta | ToolCallDelta


def _text(delta: _Delta) -> str:
    return delta.arguments_delta if isinstance(delta, ToolCallDelta) else delta.text


def _with_text(delta: _Delta, text: str) -> _Delta:
    if isinstance(delta, ToolCallDelta):
        return msgspec.structs.replace(delta, arguments_delta=text)
    return msgspec.structs.replace(delta, text=text)


def split_like(parts: Sequence[str], old: str, new: str) -> list[str]:
    """`parts` joined, with `old` replaced by `new`, cut into as many parts at the same places; a boundary that
    falls inside an occurrence of `old` moves to its end (the occurrence belongs to the part it starts in)."""
    whole = "".join(parts)
    starts = []
    at = whole.find(old)
    while at >= 0:
        starts.append(at)
        at = whole.find(old, at + len(old))
    cuts = [0]
    offset = 0
    for part in parts:
        offset += len(part)
        cut = offset
        for start in starts:
            if start < cut < start + len(old):
                cut = start + len(old)
        cuts.append(max(cut, cuts[-1]))
    return [whole[a:b].replace(old, new) for a, b in itertools.pairwise(cuts)]


def with_cwd(chunks: Sequence[StreamChunk], cwd: str) -> tuple[StreamChunk, ...]:
    """`chunks` with every `{{cwd}}` in text, reasoning and tool arguments replaced by `cwd`."""
    if not any(CWD_PLACEHOLDER in msgspec.json.encode(c).decode() for c in chunks):
        return tuple(chunks)
    out: list[StreamChunk] = list(chunks)
    deltas: dict[int, list[int]] = {}
    for position, chunk in enumerate(chunks):
        if isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta):
            deltas.setdefault(chunk.index, []).append(position)
        elif isinstance(chunk, BlockEnd):
            block = chunk.block
            if isinstance(block, ToolCallBlock):
                block = msgspec.structs.replace(
                    block, arguments=block.arguments.replace(CWD_PLACEHOLDER, cwd)
                )
            elif isinstance(block, TextBlock | ReasoningBlock):
                block = msgspec.structs.replace(block, text=block.text.replace(CWD_PLACEHOLDER, cwd))
            out[position] = msgspec.structs.replace(chunk, block=block)
    for positions in deltas.values():
        originals: list[_Delta] = [chunks[p] for p in positions]  # type: ignore[misc]  # positions hold deltas
        parts = split_like([_text(d) for d in originals], CWD_PLACEHOLDER, cwd)
        for position, delta, part in zip(positions, originals, parts, strict=True):
            out[position] = _with_text(delta, part)
    return tuple(out)
