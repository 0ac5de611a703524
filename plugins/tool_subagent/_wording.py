"""What the model reads about a subagent tool, derived from one fact of its provider: whether the child inherits
this conversation (`inherits_parent_context`). Never from the provider's name, which is only config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["LABEL_DESCRIPTION", "Wording", "parameters", "wording"]

LABEL_DESCRIPTION = "A short (3-5 word) label for the task, shown to the user while the subagent works."

_WAITS = " The call waits for the subagent to finish and returns its final answer."


@dataclass(frozen=True)
class Wording:
    """The tool's description and its `prompt` parameter's description."""

    description: str
    prompt: str


_SPAWN = Wording(
    description=(
        "Hand a self-contained task to a subagent: a separate agent with its own context, which does not see "
        "this conversation. Use it for research, a scoped implementation or an analysis whose intermediate "
        "steps would otherwise fill this conversation's context. Only its final answer comes back, not its "
        "intermediate steps, so write a complete, standalone prompt." + _WAITS
    ),
    prompt=(
        "The complete task for the subagent. It does not share this conversation's context, so include "
        "everything it needs: the goal, the relevant files, facts and constraints, and what its answer should "
        "contain."
    ),
)

_FORK = Wording(
    description=(
        "Delegate a task to a forked subagent that inherits this conversation: it is seeded with all completed "
        "turns so far, but not the current in-flight turn (this request and your work on it since). Use it for "
        "a follow-up analysis, a review or a continuation without spending this conversation's context. Only "
        "its final answer comes back, not its intermediate steps." + _WAITS
    ),
    prompt=(
        "The task for the forked subagent. It already sees this conversation's completed turns, so state only "
        "what is new: the task itself, and anything from the current turn it needs to know."
    ),
)


def wording(inherits_parent_context: bool) -> Wording:
    """The fork wording for a child that inherits this conversation's completed turns, else the spawn wording."""
    return _FORK if inherits_parent_context else _SPAWN


def parameters(inherits_parent_context: bool) -> dict[str, Any]:
    """The tool's parameters, as the original's tool takes them (`description`, `prompt`; both required)."""
    return {
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": LABEL_DESCRIPTION},
            "prompt": {"type": "string", "description": wording(inherits_parent_context).prompt},
        },
        "required": ["description", "prompt"],
    }
