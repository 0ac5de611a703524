"""The events this plugin writes, in the log's wire format (spec §1.6, the shapes of the original's
`compaction-recovery` recording), with blocks, usage and failures typed by runtime.llm."""

from __future__ import annotations

from typing import Any

import msgspec

from runtime.llm import AssistantBlock, LlmFailure, TextBlock, TokenUsage, UserMessage
from runtime.session import Event

__all__ = [
    "BracketData",
    "CheckpointRecord",
    "EndRecord",
    "PruneData",
    "PruneRecord",
    "PrunedResultRecord",
    "Span",
    "StartRecord",
    "SummaryData",
    "SummaryRecord",
]


class _Data(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Base of the records' data: camelCase on the wire, absent optional fields omitted."""


class BracketData(_Data, frozen=True, kw_only=True):
    """`compaction/start` and `compaction/end`: `{compactionId, turn}`. An `end` whose summariser call failed adds
    `failure`, and `llmStreamCall` when a model call was made (`rawOutput`/`usage` when that call completed but its
    output could not be used)."""

    compaction_id: str
    turn: int
    failure: LlmFailure | None = None
    llm_stream_call: bool | None = None
    raw_output: tuple[AssistantBlock, ...] | None = None
    usage: TokenUsage | None = None


class Span(_Data, frozen=True, kw_only=True):
    start: int
    end: int


class SummaryData(_Data, frozen=True, kw_only=True):
    """`compaction/summary`: the summary, the summariser's complete output, what it shadows and the call."""

    compaction_id: str
    summary: tuple[TextBlock, ...]
    raw_output: tuple[AssistantBlock, ...]
    llm_stream_call: bool
    shadowed_range: Span
    shadowed_seqs: tuple[int, ...]
    shadowed_token_count: int
    provider: str
    model: str
    max_tokens: int
    usage: TokenUsage | None = None


class PruneData(_Data, frozen=True, kw_only=True):
    """`compaction/prune`: the `tool/result` nodes whose content the following replacements prune."""

    compaction_id: str
    turn: int
    shadowed_seqs: tuple[int, ...]
    shadowed_token_count: int


class StartRecord(Event, tag="compaction/start", frozen=True, kw_only=True):
    data: BracketData


class SummaryRecord(Event, tag="compaction/summary", frozen=True, kw_only=True):
    data: SummaryData


class EndRecord(Event, tag="compaction/end", frozen=True, kw_only=True):
    data: BracketData


class PruneRecord(Event, tag="compaction/prune", frozen=True, kw_only=True):
    data: PruneData


class CheckpointRecord(Event, tag="user/message", frozen=True, kw_only=True):
    """The checkpoint that replaces the summarised range (`surfaceOp: {op: replace}`)."""

    data: UserMessage


class PrunedResultRecord(Event, tag="tool/result", frozen=True, kw_only=True):
    """A pruned `tool/result`: the original event's data as written, with only the tool-result content replaced."""

    data: dict[str, Any]
