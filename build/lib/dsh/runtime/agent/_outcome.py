"""`TurnOutcome`, how a turn ended as its caller sees it. A leaf: it imports nothing else of dsh.runtime.agent, so the
agent, the loop and the registry can all name it without an import circle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from dsh.runtime.llm import LlmFailure
from dsh.runtime.session import AbortKind

__all__ = ["AbortKind", "OutcomeKind", "TurnOutcome"]

OutcomeKind = Literal["completed", "aborted", "blocked", "error", "max-tokens"]
"""The `turn/end` reasons a live turn ends with (`interrupted` is written only by crash repair, never returned)."""


@dataclass(frozen=True)
class TurnOutcome:
    """How a turn ended: `kind` is its `turn/end` reason; `text` the visible text of its last assistant message;
    `failure` the model failure of an error; `error` the exception that ended it in error."""

    turn: int
    kind: OutcomeKind
    text: str = ""
    failure: LlmFailure | None = None
    error: BaseException | None = field(default=None, compare=False)
