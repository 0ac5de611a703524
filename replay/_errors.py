"""Replay's errors, under `runtime.kernel.errors.ReplayError`; each carries what it names as attributes.

```
ReplayError
├── ScriptError (ValueError)     a recorded log cannot become a script (a stream with no finish, a bad chunk, ...)
├── OverrideError (ValueError)   an override file is invalid, or does not fit the log it overrides
└── ReplayMismatch               the live run asked for something the recording does not hold (or left some unused)
```
"""

from __future__ import annotations

from runtime.kernel.errors import ReplayError
from runtime.llm import CallKey

__all__ = ["OverrideError", "ReplayMismatch", "ScriptError", "format_call"]


def format_call(call: CallKey | None) -> str:
    """`(turn, step, attempt)` as people read it: `(1,2,1)`, an auxiliary call with its purpose:
    `(1,2,1 compaction)`; a call without a key is `(no call key)`."""
    if call is None:
        return "(no call key)"
    purpose = "" if call.purpose == "step" else f" {call.purpose}"
    return f"({call.turn},{call.step},{call.attempt}{purpose})"


class ScriptError(ReplayError, ValueError):
    """A recorded log cannot become a replay script. `place` is where (`file:line`, or `session ID seq N`); `call`
    the call it concerns, when one is known."""

    def __init__(self, message: str, *, place: str, call: CallKey | None = None) -> None:
        super().__init__(f"{place}: {message}")
        self.reason = message
        self.place = place
        self.call = call


class OverrideError(ReplayError, ValueError):
    """An override file is invalid (`index` is the 0-based position of the override in it, when one is at fault),
    or an override does not fit the log it is applied to."""

    def __init__(self, message: str, *, file: str, index: int | None = None) -> None:
        where = file if index is None else f"{file}: overrides[{index}]"
        super().__init__(f"{where}: {message}")
        self.reason = message
        self.file = file
        self.index = index


class ReplayMismatch(ReplayError):
    """The live run diverged from the recording. `session_id` is the live session, `log` the recorded log it is
    bound to (None when it has none), `call` the key the live run asked for (None for `assert_consumed`),
    `recorded` what the recording holds there and `asked` what the live run asked for, both for people."""

    def __init__(
        self,
        message: str,
        *,
        session_id: str | None,
        log: str | None,
        call: CallKey | None,
        recorded: str,
        asked: str,
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.log = log
        self.call = call
        self.recorded = recorded
        self.asked = asked
