"""Inbox input in a recorded log: where each input was spliced (`Delivery`, read by the script walk through
`Positions`) and what its source names (`sender_of`, `job_of`). The live gate that admits inputs at
these positions is the driver's (`replay/driver/_gate.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from dsh.runtime.llm import (
    JobNoticeSource,
    SubagentReportSource,
    SubagentSettledSource,
    UserMessage,
    UserMessageSource,
    source_kind,
)
from dsh.runtime.session import (
    Event,
    InboxSpliced,
    InboxTarget,
    StepEnd,
    StepStart,
    TurnEnd,
    TurnStart,
)

__all__ = ["Delivery", "Position", "Positions", "job_of", "sender_of"]

Position = tuple[str, int, int] | None
"""The last boundary (`turn/start`, `step/start`, `step/end`, `turn/end`, or a claim `claim <target>`) logged
before a point of a log, with its turn and step (0 where it has none); None: before any."""


def sender_of(source: UserMessageSource) -> str | None:
    """The session that sent an input, if its source names one (a subagent's report or settled notice)."""
    return (
        source.sender_session_id if isinstance(source, SubagentReportSource | SubagentSettledSource) else None
    )


def job_of(source: UserMessageSource) -> str | None:
    """The background job an input is the notice of, if any."""
    return source.job_id if isinstance(source, JobNoticeSource) else None


@dataclass(frozen=True, slots=True)
class Delivery:
    """One input queued in a recorded log: its target queue, the position it was spliced at, and the message (whose
    source says its kind, the session that sent it and the job it is the notice of)."""

    target: InboxTarget
    position: Position
    message: UserMessage

    @property
    def kind(self) -> str:
        return source_kind(self.message.source)

    @property
    def sender(self) -> str | None:
        return sender_of(self.message.source)

    @property
    def key(self) -> str | None:
        return job_of(self.message.source)


class Positions:
    """Follows a log's positions event by event (the recorded walk and the live gate use the same rules)."""

    __slots__ = ("current",)

    def __init__(self, current: Position = None) -> None:
        self.current = current

    def after(self, event: Event) -> Position:
        """The position once `event` is logged (unchanged for an event that is not a boundary or a claim)."""
        if isinstance(event, TurnStart | TurnEnd):
            return (event.__struct_config__.tag, event.data.turn, 0)  # type: ignore[return-value]
        if isinstance(event, StepStart | StepEnd):
            return (event.__struct_config__.tag, event.data.turn, event.data.step)  # type: ignore[return-value]
        if isinstance(event, InboxSpliced) and event.data.removed_count:
            turn, step = (self.current[1], self.current[2]) if self.current is not None else (0, 0)
            return (f"claim {event.data.target}", turn, step)
        return self.current

    def feed(self, event: Event) -> list[Delivery]:
        """Move past `event`; a queued input (a splice that inserts) is returned as its deliveries."""
        if isinstance(event, InboxSpliced) and not event.data.removed_count and event.data.inserted:
            return [Delivery(event.data.target, self.current, message) for message in event.data.inserted]
        self.current = self.after(event)
        return []
