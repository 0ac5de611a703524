"""The token meter: a deterministic estimate of a request's tokens from its characters, and the calibration that
scales it by what the provider reported for an earlier request.

No tokenizer: providers differ (DeepSeek's, OpenAI's and local models' vocabularies all differ), a tokenizer library
would need its vocabulary files at run time, and compaction needs a bound, not an exact count. The provider's reported
usage corrects the heuristic once a response arrives.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from dsh.runtime.llm import (
    ContentBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)

__all__ = ["Calibration", "TokenMeter"]

_ENCODER = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class TokenMeter:
    """Estimates tokens as `ceil(characters / chars_per_token)` per piece of text, plus `message_tokens` of framing
    per message and a flat `image_tokens` per image. Tool schemas count as their JSON text. The same input always
    gives the same estimate."""

    chars_per_token: float = 4.0
    message_tokens: int = 4
    image_tokens: int = 1_000

    def text(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def block(self, block: ContentBlock) -> int:
        if isinstance(block, TextBlock | ReasoningBlock):
            return self.text(block.text)
        if isinstance(block, ToolCallBlock):
            return self.text(block.id) + self.text(block.name) + self.text(block.arguments)
        if isinstance(block, ToolResultBlock):
            return self.text(block.tool_call_id) + sum(self.block(part) for part in block.content)
        assert isinstance(block, ImageBlock)
        return self.image_tokens

    def content(self, message: Message) -> int:
        """The message's blocks, without its framing."""
        return sum(self.block(block) for block in message.content)

    def message(self, message: Message) -> int:
        return self.message_tokens + self.content(message)

    def tools(self, tools: Iterable[ToolSchema | Mapping[str, Any]]) -> int:
        """Tool schemas as their JSON text (a `ToolSchema`, or the dict a `request/header` stores)."""
        return sum(self.text(_ENCODER.encode(tool).decode()) for tool in tools)

    def request(
        self, *, system: str, tools: Iterable[ToolSchema | Mapping[str, Any]], messages: Iterable[Message]
    ) -> int:
        """A whole request: system prompt, tool schemas and messages."""
        return self.text(system) + self.tools(tools) + sum(self.message(m) for m in messages)


@dataclass(frozen=True, slots=True)
class Calibration:
    """What the provider reported (`reported`: tokens sent, `inputTokens + cacheReadTokens`) against the meter's
    estimate of the same request. `ratio` is their quotient bounded to [MIN_RATIO, MAX_RATIO], so one odd usage
    report (a proxy that reports nothing, a cached-prompt quirk) cannot make the meter useless."""

    reported: int
    estimated: int

    MIN_RATIO = 0.5
    MAX_RATIO = 4.0

    @property
    def ratio(self) -> float:
        if self.estimated <= 0 or self.reported <= 0:
            return 1.0
        return min(max(self.reported / self.estimated, self.MIN_RATIO), self.MAX_RATIO)

    def apply(self, estimate: int) -> int:
        """`estimate` scaled by the ratio: the calibrated estimate."""
        return math.ceil(estimate * self.ratio)
