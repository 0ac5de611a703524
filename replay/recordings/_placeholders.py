"""Placeholders in recorded text, filled from the live run as a call is served:

- `{{cwd}}`: the original wrote it where the recording session's workspace path was (tool arguments, answers);
  replay serves the live workspace path in its place.
- `{{fromRequest:<regex>}}`: a value no static file can know (a minted id the model must echo back), taken from
  the live request as the original's replay takes it: the corpus is every string leaf of the request's messages
  joined by newlines, the pattern's last match wins, and its first group (the whole match without one) goes in
  the placeholder's place. The last two braces of a run of `}` close the placeholder, so a pattern may end with a
  brace quantifier (`[0-9a-f]{4}}}`). A pattern that matches nothing, an invalid pattern and an unclosed
  placeholder each raise `PlaceholderError`.

Deltas are rewritten block by block, so a placeholder split across two deltas is replaced whole and every
`block-end` still agrees with its deltas."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence

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

__all__ = [
    "CWD_PLACEHOLDER",
    "FROM_REQUEST_OPEN",
    "PlaceholderError",
    "from_request",
    "split_like",
    "substitute",
    "with_cwd",
]

CWD_PLACEHOLDER = "{{cwd}}"
FROM_REQUEST_OPEN = "{{fromRequest:"
_CLOSE = "}}"


class PlaceholderError(ValueError):
    """A `{{fromRequest:...}}` placeholder cannot be filled: `reason` says why (unclosed, an invalid pattern, no
    match in the live request)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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


def _blocks_text(chunks: Sequence[StreamChunk]) -> Iterator[str]:
    """Every text a placeholder may stand in: each block's deltas joined, and each finished block's text."""
    joined: dict[int, list[str]] = {}
    for chunk in chunks:
        if isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta):
            joined.setdefault(chunk.index, []).append(_text(chunk))
        elif isinstance(chunk, BlockEnd):
            block = chunk.block
            if isinstance(block, ToolCallBlock):
                yield block.arguments
            elif isinstance(block, TextBlock | ReasoningBlock):
                yield block.text
    yield from ("".join(parts) for parts in joined.values())


def substitute(chunks: Sequence[StreamChunk], replacements: Mapping[str, str]) -> tuple[StreamChunk, ...]:
    """`chunks` with every occurrence of each key of `replacements` in text, reasoning and tool arguments replaced by
    its value, in the mapping's order."""
    out: list[StreamChunk] = list(chunks)
    deltas: dict[int, list[int]] = {}
    for position, chunk in enumerate(chunks):
        if isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta):
            deltas.setdefault(chunk.index, []).append(position)
        elif isinstance(chunk, BlockEnd):
            block = chunk.block
            if isinstance(block, ToolCallBlock):
                block = msgspec.structs.replace(block, arguments=_replace_all(block.arguments, replacements))
            elif isinstance(block, TextBlock | ReasoningBlock):
                block = msgspec.structs.replace(block, text=_replace_all(block.text, replacements))
            out[position] = msgspec.structs.replace(chunk, block=block)
    for positions in deltas.values():
        originals: list[_Delta] = [chunks[p] for p in positions]  # type: ignore[misc]  # positions hold deltas
        parts = [_text(d) for d in originals]
        for old, new in replacements.items():
            parts = split_like(parts, old, new)
        for position, delta, part in zip(positions, originals, parts, strict=True):
            out[position] = _with_text(delta, part)
    return tuple(out)


def _replace_all(text: str, replacements: Mapping[str, str]) -> str:
    for old, new in replacements.items():
        text = text.replace(old, new)
    return text


def with_cwd(chunks: Sequence[StreamChunk], cwd: str) -> tuple[StreamChunk, ...]:
    """`chunks` with every `{{cwd}}` in text, reasoning and tool arguments replaced by `cwd`."""
    if not any(CWD_PLACEHOLDER in text for text in _blocks_text(chunks)):
        return tuple(chunks)
    return substitute(chunks, {CWD_PLACEHOLDER: cwd})


def _placeholders(text: str) -> Iterator[tuple[str, str]]:
    """Each `{{fromRequest:<pattern>}}` in `text`: the whole placeholder and its pattern."""
    at = text.find(FROM_REQUEST_OPEN)
    while at >= 0:
        start = at + len(FROM_REQUEST_OPEN)
        close = text.find(_CLOSE, start)
        if close < 0:
            raise PlaceholderError(f"unclosed placeholder {text[at : at + 60]!r}: it needs a closing }}}}")
        end = close + len(_CLOSE)
        while end < len(text) and text[end] == "}":  # the last two braces of a run close it
            end += 1
        yield text[at:end], text[start : end - len(_CLOSE)]
        at = text.find(FROM_REQUEST_OPEN, end)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def from_request(chunks: Sequence[StreamChunk], messages: Sequence[object]) -> tuple[StreamChunk, ...]:
    """`chunks` with every `{{fromRequest:<regex>}}` filled from the live request's `messages` (see the module)."""
    texts = [text for text in _blocks_text(chunks) if FROM_REQUEST_OPEN in text]
    if not texts:
        return tuple(chunks)
    corpus = "\n".join(_strings(msgspec.to_builtins(list(messages))))
    values: dict[str, str] = {}
    for text in texts:
        for placeholder, pattern in _placeholders(text):
            if placeholder in values:
                continue
            try:
                compiled = re.compile(pattern)
            except re.error as error:
                raise PlaceholderError(f"{placeholder}: invalid pattern ({error})") from None
            matches = list(compiled.finditer(corpus))
            if not matches:
                raise PlaceholderError(
                    f"{placeholder}: the pattern matched nothing in the live request's messages"
                )
            last = matches[-1]  # the last match wins
            values[placeholder] = last.group(1) if compiled.groups else last.group(0)
    return substitute(chunks, values)
