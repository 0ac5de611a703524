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


_CONTINUABLE = (
    " This tool runs in the background by default: it returns a durable subagent id at once and keeps the "
    "child's conversation available for later turns. When a run settles, a notice with its outcome and its closing "
    "message arrives as your next input; `send_message` gives the same child more work. Set "
    "`run_in_background: false` only when your next action depends on the result."
)
_JOB = (
    " Set `run_in_background: true` to run it as a background job instead: the call returns a job id at once; "
    "read the subagent's answer with `job_output` and stop it with `job_kill`."
)
_JOB_PARAMETER = (
    "Run the subagent as a background job and return a job id at once (read its answer with job_output, stop it "
    "with job_kill). Defaults to false: the call waits for the answer."
)
_BACKGROUND_PARAMETER = (
    "Whether to run in the background and return a durable subagent id at once. Defaults to true. Set false to "
    "wait for the result when your next action depends on it."
)


def wording(inherits_parent_context: bool, *, continuable: bool = False, jobs: bool = False) -> Wording:
    """The fork wording for a child that inherits this conversation's completed turns, else the spawn wording;
    a continuable tool says it runs in the background and returns a durable subagent id instead of waiting; a
    one-shot tool with background `jobs` says it waits unless asked to run as a job."""
    words = _FORK if inherits_parent_context else _SPAWN
    if continuable:
        return Wording(words.description.removesuffix(_WAITS) + _CONTINUABLE, words.prompt)
    if jobs:
        return Wording(words.description + _JOB, words.prompt)
    return words


def parameters(
    inherits_parent_context: bool, *, continuable: bool = False, jobs: bool = False
) -> dict[str, Any]:
    """The tool's parameters, as the original's tool takes them (`description`, `prompt`; both required; and
    `run_in_background` for a continuable tool, or a one-shot tool with background `jobs`)."""
    properties: dict[str, Any] = {
        "description": {"type": "string", "description": LABEL_DESCRIPTION},
        "prompt": {"type": "string", "description": wording(inherits_parent_context).prompt},
    }
    if continuable:
        properties["run_in_background"] = {"type": "boolean", "description": _BACKGROUND_PARAMETER}
    elif jobs:
        properties["run_in_background"] = {"type": "boolean", "description": _JOB_PARAMETER}
    return {"type": "object", "properties": properties, "required": ["description", "prompt"]}
