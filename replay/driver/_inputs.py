"""What a driver feeds the primary agent, in order: prompts that start turns, turns the agent's inbox starts by
itself (a background child's report), steering typed during a turn, prompts left unclaimed when the agent closed,
and the resumes between. Read from a recording that logged its inbox (each input where it was spliced), else from
the recorded user messages, else from a scenario's `inputs`."""

from __future__ import annotations

from dataclasses import dataclass

from dsh.runtime.llm import TextBlock, UserBlock
from dsh.runtime.session import InboxSpliced, SessionEndSeed, TurnEnd, TurnStart

from ..recordings._errors import ScriptError
from ..recordings._source import RecordedLog
from ..script._inbox import Positions
from ..script._script import recorded_turns
from ._scenario import Scenario

__all__ = [
    "Action",
    "Leave",
    "Resume",
    "Run",
    "Steer",
    "Woken",
    "describe",
    "plan_of_doc",
    "plan_of_log",
    "plan_of_turns",
]


@dataclass(frozen=True)
class Run:
    """Queue `blocks` and run the turn (number `turn`) it starts."""

    turn: int
    blocks: tuple[UserBlock, ...]


@dataclass(frozen=True)
class Woken:
    """Wait for turn `turn`, which the agent's inbox starts (input from a background sender, or left queued)."""

    turn: int


@dataclass(frozen=True)
class Steer:
    """Queue `blocks` as steering (`next-step`) for turn `turn`, at step `step` when known (a scenario's `steer`);
    in a replay the inbox gate admits it where the recording has it."""

    turn: int
    step: int | None
    blocks: tuple[UserBlock, ...]


@dataclass(frozen=True)
class Leave:
    """Queue `blocks` as a prompt and leave it unclaimed (the agent closes next)."""

    blocks: tuple[UserBlock, ...]


@dataclass(frozen=True)
class Resume:
    """Close the agent and resume its session."""


Action = Run | Woken | Steer | Leave | Resume


def plan_of_log(log: RecordedLog, resumes: set[int]) -> list[Action] | None:
    """The plan of a recording that logged its inbox (None: it logged none; use `plan_of_turns`)."""
    seed = log.info.seed_length
    positions = Positions()
    actions: list[Action] = []
    waiting: list[tuple[UserBlock, ...]] = []  # user prompts queued since the last turn started
    ended = False
    saw_inbox = False
    for event, _ in log.events():
        if event.seq < seed or event.type not in (
            InboxSpliced.TAG,
            TurnStart.TAG,
            TurnEnd.TAG,
            SessionEndSeed.TAG,
        ):
            continue
        view = event.view()
        if isinstance(view, InboxSpliced):
            saw_inbox = True
            for delivery in positions.feed(view):
                if delivery.kind != "user":
                    continue
                if delivery.target == "next-step":
                    turn = delivery.position[1] if delivery.position is not None else 1
                    if delivery.position is not None and delivery.position[0] == TurnEnd.TAG:
                        turn += 1
                    actions.append(Steer(turn, None, delivery.message.content))
                else:
                    waiting.append(delivery.message.content)
        elif isinstance(view, TurnStart):
            positions.feed(view)
            prompts, waiting = waiting, []
            for blocks in prompts[:-1]:
                actions.append(Leave(blocks))
            actions.append(Run(view.data.turn, prompts[-1]) if prompts else Woken(view.data.turn))
        elif isinstance(view, TurnEnd):
            positions.feed(view)
            ended = True
        elif isinstance(view, SessionEndSeed) and ended:
            for blocks in waiting:  # queued before the close, claimed by the resumed agent
                actions.append(Leave(blocks))
            waiting = []
            actions.append(Resume())
    if not saw_inbox:
        return None
    return _resumes_where_logged(actions, resumes)


def _resumes_where_logged(actions: list[Action], resumes: set[int]) -> list[Action]:
    """`actions` with a resume before each turn in `resumes` the log did not already mark (a scenario's own)."""
    out: list[Action] = []
    for action in actions:
        turn = action.turn if isinstance(action, Run | Woken) else None
        if turn is not None and turn in resumes and not (out and isinstance(out[-1], Resume | Leave)):
            out.append(Resume())
        out.append(action)
    return out


def plan_of_turns(log: RecordedLog, resumes: set[int]) -> list[Action]:
    """The plan of a recording without inbox events: each turn run with the user messages logged in it."""
    actions: list[Action] = []
    for turn in recorded_turns(log):
        blocks = tuple(block for message in turn.inputs for block in message.content)
        if not blocks:
            raise ScriptError(f"turn {turn.turn} has no user input to re-run it with", place=log.info.name)
        if turn.turn in resumes:
            actions.append(Resume())
        actions.append(Run(turn.turn, blocks))
    return actions


def plan_of_doc(scenario: Scenario, resumes: set[int]) -> list[Action]:
    """The plan of a scenario's `inputs`, `steer`, `left_queued` and `woken_turns`."""
    doc = scenario.doc
    if doc.inputs is None:
        raise ScriptError("no inputs: list them under `inputs:` in scenario.yml", place=str(scenario.log))
    inputs = list(doc.inputs)
    total = len(inputs) + len(doc.left_queued) + len(doc.woken_turns)
    bad = sorted(set(doc.left_queued) - resumes)
    if bad:
        raise ScriptError(
            f"left_queued names turn(s) {bad} that are not in resume_before {sorted(resumes)}: a prompt is left "
            "unclaimed only where the agent closes",
            place=str(scenario.log),
        )
    actions: list[Action] = []
    for turn in range(1, total + 1):
        if turn in doc.left_queued:
            actions += [Leave((TextBlock(doc.left_queued[turn]),)), Resume(), Woken(turn)]
            continue
        if turn in doc.woken_turns:
            actions.append(Woken(turn))
            continue
        if turn in resumes:
            actions.append(Resume())
        actions += [Steer(s.turn, s.step, (TextBlock(s.text),)) for s in doc.steer if s.turn == turn]
        actions.append(Run(turn, (TextBlock(inputs.pop(0)),)))
    return actions


def describe(actions: list[Action]) -> list[str]:
    """One line per action (for error messages and tests)."""
    lines = []
    for action in actions:
        if isinstance(action, Run | Woken):
            lines.append(f"{type(action).__name__.lower()} turn {action.turn}")
        else:
            lines.append(type(action).__name__.lower())
    return lines
