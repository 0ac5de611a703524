"""The plugin's config: the models' context windows, when compaction runs, what it keeps, how the summariser is
called and which tool results are pruned."""

from __future__ import annotations

import msgspec

__all__ = ["DEFAULT_CONTEXT_WINDOW", "DEFAULT_INSTRUCTIONS", "Config"]

DEFAULT_CONTEXT_WINDOW = 128_000
"""Tokens; the fallback when the log states no window (DeepSeek V4's: the original logged `contextWindow: 128000`)."""

DEFAULT_INSTRUCTIONS = (
    "Condense the conversation transcript below into a checkpoint the agent will continue from, in place of the "
    "transcript. Keep what the work still depends on: the user's goals, constraints and preferences; decisions and "
    "their reasons; facts learned (file paths, commands, identifiers, versions, error messages); what was done and "
    "its results; what remains to do. If the transcript opens with an earlier checkpoint, fold it in. Be concise "
    "and factual, use plain text or short lists, and write no preamble."
)


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """See README.md "Config" for each key and its default."""

    context_window: int = DEFAULT_CONTEXT_WINDOW
    context_windows: dict[str, int] = msgspec.field(default_factory=dict)
    threshold_ratio: float = 0.8
    retain_ratio: float = 0.3
    chars_per_token: float = 4.0
    calibrate: bool = True
    summary_provider: str | None = None
    summary_model: str | None = None
    summary_max_tokens: int = 4096
    summary_reasoning_effort: str | None = None
    summary_instructions: str = DEFAULT_INSTRUCTIONS
    transcript_block_chars: int = 4000
    overflow_recoveries: int = 1
    prune: bool = True
    prune_min_tokens: int = 1000

    def __post_init__(self) -> None:
        windows = {"context_window": self.context_window} | {
            f"context_windows.{model}": size for model, size in self.context_windows.items()
        }
        for key, size in windows.items():
            if size < 1024:
                raise ValueError(f"{key} must be at least 1024 tokens, got {size}")
        if not 0 < self.threshold_ratio <= 1:
            raise ValueError(f"threshold_ratio must be in (0, 1], got {self.threshold_ratio}")
        if not 0 < self.retain_ratio < 1:
            raise ValueError(f"retain_ratio must be in (0, 1), got {self.retain_ratio}")
        if not self.chars_per_token > 0:
            raise ValueError(f"chars_per_token must be positive, got {self.chars_per_token}")
        if self.summary_max_tokens < 32:
            raise ValueError(f"summary_max_tokens must be at least 32, got {self.summary_max_tokens}")
        if self.transcript_block_chars < 200:
            raise ValueError(
                f"transcript_block_chars must be at least 200, got {self.transcript_block_chars}"
            )
        if self.overflow_recoveries < 0:
            raise ValueError(f"overflow_recoveries must be >= 0, got {self.overflow_recoveries}")
        if self.prune_min_tokens < 100:
            raise ValueError(
                f"prune_min_tokens must be at least 100 (a placeholder must never be pruned again), "
                f"got {self.prune_min_tokens}"
            )
        if not self.summary_instructions.strip():
            raise ValueError("summary_instructions must not be empty")

    def window(self, model: str | None, logged: int | None = None) -> int:
        """The context window of `model`: its `context_windows` entry (an override), else `logged` (the window the
        session's `request/context` stated for it), else `context_window` (the fallback)."""
        if model is not None and model in self.context_windows:
            return self.context_windows[model]
        if logged is not None:
            return logged
        return self.context_window
