"""`LogFold`: the seam for state derived from a log by a layer above it. The log's rules (`LogState`) feed every
fold they were given with each event of the types it declares, in seq order, after the rules accepted it: the
events read back when the log opens (`open_log`, `resume`, `load_state`) and every event appended afterwards. The
session package keeps no such state of its own: an agent's inbox, header or snapshot is its fold's (`dsh.runtime.agent`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from ._events import Event, StoredEvent

__all__ = ["LogFold"]


class LogFold(Protocol):
    """State folded from a log's events, one at a time, in seq order.

    `types` names the event classes the fold wants (the others never reach it, so a fold that wants no
    `assistant/chunk` costs the chunk path nothing). For each such event the rules accept, `check` runs first, for
    every fold, and may refuse the event by raising `LogRuleError` (then the event is not logged and no rule state or
    fold changes); then `feed` folds it in, and must not raise. `data` is the event's typed data: the writer's own
    value on append, decoded from the stored text otherwise."""

    @property
    def types(self) -> Collection[type[Event]]:
        """The event classes this fold wants."""
        ...

    def check(self, event: StoredEvent, data: object) -> None:
        """Raise `LogRuleError` if `event` breaks a rule this fold keeps; change nothing either way."""
        ...

    def feed(self, event: StoredEvent, data: object) -> None:
        """Fold in an accepted event (checked by every fold first); never raises."""
        ...
