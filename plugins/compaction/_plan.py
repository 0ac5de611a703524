"""Pure planning over the surface: where history may be cut (never between a tool call and its result), which tail
is kept verbatim, which tool results are pruned, and the transcript the summariser reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from dsh.runtime.llm import (
    AssistantMessage,
    ImageBlock,
    Message,
    PluginSource,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSource,
)
from dsh.runtime.session import ToolResultEvent

from ._meter import TokenMeter

__all__ = [
    "CHECKPOINT_PLUGIN",
    "Node",
    "cut_points",
    "is_checkpoint",
    "prune_candidates",
    "pruned_data",
    "pruned_placeholder",
    "retained_cut",
    "transcript",
]

CHECKPOINT_PLUGIN = "compact"
"""`source.plugin` of a checkpoint message (the original's id, kept for its logs)."""


@dataclass(frozen=True, slots=True)
class Node:
    """One surface node: the event that holds it (`seq`, `type`, `data` as written), its message, the meter's
    estimate of it (0 for an empty assistant message, which no request carries), the tool calls it makes and the
    calls it answers."""

    seq: int
    type: str
    data: str
    message: Message
    tokens: int
    calls: tuple[str, ...]
    answers: tuple[str, ...]

    @classmethod
    def of(cls, seq: int, type: str, data: str, message: Message, meter: TokenMeter) -> Node:
        visible = not (isinstance(message, AssistantMessage) and not message.content)
        calls = tuple(b.id for b in message.content if isinstance(b, ToolCallBlock))
        answers = tuple(b.tool_call_id for b in message.content if isinstance(b, ToolResultBlock))
        return cls(seq, type, data, message, meter.message(message) if visible else 0, calls, answers)


def cut_points(nodes: Sequence[Node]) -> list[int]:
    """The indexes i (0 < i < len) where history may be cut into nodes[:i] and nodes[i:]: no tool call before i
    has its result at or after i. A call no node answers (a log cut short) holds nothing together."""
    answered = {call for node in nodes for call in node.answers}
    pending: set[str] = set()
    points: list[int] = []
    for index, node in enumerate(nodes):
        if index and not pending:
            points.append(index)
        pending.update(call for call in node.calls if call in answered)
        pending.difference_update(node.answers)
    return points


def retained_cut(nodes: Sequence[Node], retain_ratio: float) -> int:
    """Where the kept tail starts: the longest tail at a cut point whose tokens are at most `retain_ratio` of the
    history's, and never less than the newest uncuttable group of nodes. 0: nothing can be compacted."""
    points = cut_points(nodes)
    if not points:
        return 0
    budget = retain_ratio * sum(node.tokens for node in nodes)
    tail = 0
    tails: dict[int, int] = {}
    for index in range(len(nodes) - 1, -1, -1):
        tail += nodes[index].tokens
        tails[index] = tail
    within = [point for point in points if tails[point] <= budget]
    return within[0] if within else points[-1]


def prune_candidates(nodes: Sequence[Node], min_tokens: int, meter: TokenMeter) -> list[Node]:
    """The `tool/result` nodes among `nodes` whose results hold at least `min_tokens` tokens."""
    return [
        node
        for node in nodes
        if node.type == ToolResultEvent.TAG and meter.content(node.message) >= min_tokens and node.answers
    ]


def pruned_placeholder(tokens: int) -> str:
    return (
        f"[This tool output (about {tokens} tokens) was pruned to free context. "
        "Run the tool again if its output is still needed.]"
    )


def pruned_data(node: Node, placeholder: str) -> dict[str, Any]:
    """The data of a pruning replacement of `node`: its data as written with each tool-result block's content
    replaced by `placeholder` and `meta` (tool-private, never model-visible) dropped; nothing else changes."""
    data: dict[str, Any] = msgspec.json.decode(node.data)
    data.pop("meta", None)
    for block in data["message"]["content"]:
        if isinstance(block, dict) and block.get("type") == "tool-result":
            block["content"] = [{"type": "text", "text": placeholder}]
    return data


def is_checkpoint(node: Node) -> bool:
    """A checkpoint: the message a summary compaction put in place of older history."""
    source = node.message.source
    return isinstance(source, PluginSource) and source.plugin == CHECKPOINT_PLUGIN


# ---------------------------------------------------------------- the summariser's transcript


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters omitted ...]\n{text[-tail:]}"


def _entry(message: Message, names: dict[str, str], limit: int) -> str | None:
    parts: list[str] = []
    if isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, TextBlock) and block.text.strip():
                parts.append(_clip(block.text, limit))
            elif isinstance(block, ToolCallBlock):
                names[block.id] = block.name
                parts.append(f"[calls {block.name} {_clip(block.arguments, limit)}]")
        return "Assistant:\n" + "\n".join(parts) if parts else None
    source = message.source
    checkpoint = isinstance(source, PluginSource) and source.plugin == CHECKPOINT_PLUGIN
    # a checkpoint reads as its summary alone: the preamble and tags speak to the agent, not the summariser
    content = message.content[1:-1] if checkpoint and len(message.content) > 2 else message.content
    for part in content:
        if isinstance(part, ToolResultBlock):
            texts = [
                _clip(p.text, limit) if isinstance(p, TextBlock) else "[image]"
                for p in part.content
                if not isinstance(p, TextBlock) or p.text
            ]
            label = names.get(part.tool_call_id, "tool")
            status = ", error" if part.is_error else ""
            parts.append(f"Tool result ({label}{status}):\n" + ("\n".join(texts) or "(no output)"))
        elif isinstance(part, TextBlock):
            parts.append(_clip(part.text, limit))
        elif isinstance(part, ImageBlock):
            parts.append("[image]")
    if not parts:
        return None
    if isinstance(source, ToolSource):
        return "\n".join(parts)
    if checkpoint:
        return "Earlier checkpoint:\n" + "\n".join(parts)
    if isinstance(source, PluginSource):
        return f"Context ({source.plugin}):\n" + "\n".join(parts)
    return "User:\n" + "\n".join(parts)


def transcript(messages: Sequence[Message], *, block_chars: int, budget_chars: int) -> str:
    """The messages as a plain transcript: each text clipped to `block_chars` (head and tail kept), reasoning left
    out. Past `budget_chars` the oldest entries after the first are dropped (the first is often an earlier
    checkpoint) and a marker says how many."""
    names: dict[str, str] = {}
    entries = [e for e in (_entry(m, names, block_chars) for m in messages) if e is not None]
    if sum(len(e) + 2 for e in entries) <= budget_chars or len(entries) < 2:
        return _clip("\n\n".join(entries), max(budget_chars, 200))
    first = _clip(entries[0], budget_chars // 2)
    room = budget_chars - len(first) - 64
    kept: list[str] = []
    for entry in reversed(entries[1:]):
        if len(entry) + 2 > room:
            if not kept:  # the newest entry alone is too long: keep its head and tail
                kept.append(_clip(entry, max(room - 2, 200)))
            break
        kept.append(entry)
        room -= len(entry) + 2
    omitted = len(entries) - 1 - len(kept)
    marker = f"[... {omitted} earlier messages omitted ...]"
    return "\n\n".join([first, marker, *reversed(kept)])
