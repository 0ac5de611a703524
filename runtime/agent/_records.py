"""The events the agent loop writes, in the log's wire format, with their data typed by runtime.llm (messages, chunks,
failures) so nothing a model call produced is narrowed on the way into the log."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from runtime.llm import (
    AssistantMessage,
    CallConfig,
    LlmFailure,
    StreamChunk,
    TokenUsage,
    ToolSpec,
    UserMessage,
)
from runtime.session import Event, ToolResultError

__all__ = [
    "AbortKind",
    "AbortReason",
    "ChunkData",
    "ChunkRecord",
    "EpochHeader",
    "HeaderConfig",
    "ModelMessageData",
    "ModelMessageRecord",
    "RequestContextData",
    "RequestContextRecord",
    "RequestHeaderData",
    "RequestHeaderRecord",
    "ToolOutcomeData",
    "ToolOutcomeRecord",
    "TurnEndData",
    "TurnEndReason",
    "TurnEndRecord",
    "UserMessageRecord",
    "header_config",
]


class _Data(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Base of the records' data: camelCase on the wire, absent optional fields omitted."""


AbortKind = Literal["user", "parent", "disposed"]
"""Who aborted a turn: the user, a parent agent (cancelling the tool call that runs a subagent) or disposal."""


class AbortReason(_Data, frozen=True, kw_only=True):
    """Who aborted a turn: `user`, `parent` (a parent agent's cancellation) or `disposed`."""

    kind: str


class TurnEndReason(_Data, frozen=True, kw_only=True):
    """`completed`, `max-tokens`, `blocked{message}`, `aborted{reason}`, `error{error}`."""

    kind: str
    error: LlmFailure | None = None
    reason: AbortReason | None = None
    message: str | None = None


class TurnEndData(_Data, frozen=True, kw_only=True):
    turn: int
    reason: TurnEndReason


class TurnEndRecord(Event, tag="turn/end", frozen=True, kw_only=True):
    data: TurnEndData


class UserMessageRecord(Event, tag="user/message", frozen=True, kw_only=True):
    data: UserMessage


class ChunkData(_Data, frozen=True, kw_only=True):
    turn: int
    step: int
    chunk: StreamChunk


class ChunkRecord(Event, tag="assistant/chunk", frozen=True, kw_only=True):
    data: ChunkData


class ModelMessageData(_Data, frozen=True, kw_only=True):
    turn: int
    step: int
    message: AssistantMessage
    usage: TokenUsage | None = None
    interrupted: bool | None = None


class ModelMessageRecord(Event, tag="assistant/message", frozen=True, kw_only=True):
    data: ModelMessageData


class ToolOutcomeData(_Data, frozen=True, kw_only=True):
    turn: int
    step: int
    message: UserMessage
    error: ToolResultError | None = None
    meta: Any = None


class ToolOutcomeRecord(Event, tag="tool/result", frozen=True, kw_only=True):
    data: ToolOutcomeData


class HeaderConfig(_Data, frozen=True, kw_only=True):
    """`request/header` config: provider and model, then the call config's set fields."""

    provider: str
    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    stop: tuple[str, ...] | None = None


class EpochHeader(_Data, frozen=True, kw_only=True):
    """Everything of a request except its messages; an empty system prompt or tool list is omitted."""

    config: HeaderConfig
    system: str | None = None
    tools: tuple[ToolSpec, ...] | None = None


class RequestHeaderData(_Data, frozen=True, kw_only=True):
    header: EpochHeader
    reason: str


class RequestHeaderRecord(Event, tag="request/header", frozen=True, kw_only=True):
    data: RequestHeaderData


class RequestContextData(_Data, frozen=True, kw_only=True):
    """What a step's request went to: provider, model and, when the provider's adapter states it, the model's
    context window in tokens (absent when unknown)."""

    provider: str
    model: str
    context_window: int | None = None


class RequestContextRecord(Event, tag="request/context", frozen=True, kw_only=True):
    data: RequestContextData


def header_config(provider: str, model: str, config: CallConfig) -> HeaderConfig:
    """The header config of a call: provider, model and every set field of `config`."""
    return HeaderConfig(
        provider=provider,
        model=model,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        reasoning_effort=config.reasoning_effort,
        stop=config.stop,
    )
