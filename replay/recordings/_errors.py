"""Replay's errors, under `dsh.runtime.kernel.errors.ReplayError`; each carries what it names as attributes.

```
ReplayError
├── ScriptError (ValueError)     a recorded log cannot become a script (a stream with no finish, a bad chunk, ...)
├── OverrideError (ValueError)   an override file is invalid, or does not fit the log it overrides
├── ReplayMismatch               the live run asked for something the recording does not hold (or left some unused)
│   └── RecordingEnded (LlmCallError)  ... a turn after the recording's last: the call fails with that one line
└── RecordingFailed              a recording was made, and is no recording of working turns (a turn ended in error,
                                 or a scripted model's replies did not match its calls); .logs, .problems
```
"""

from __future__ import annotations

from dsh.runtime.kernel.errors import ReplayError
from dsh.runtime.llm import CallKey, LlmCallError, LlmFailure

__all__ = [
    "OverrideError",
    "RecordingEnded",
    "RecordingFailed",
    "ReplayMismatch",
    "ScriptError",
    "format_call",
]


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


class RecordingEnded(ReplayMismatch, LlmCallError):
    """The live run went past the recording: a call of turn `turn`, after the last of the `turns` turns `log` holds
    (a replayed chat typed one more line, or resumed a replayed session). A mismatch like any other (the adapter
    keeps it for `assert_consumed`), and an `LlmCallError` whose failure (code `REPLAY_ENDED`) says it in one line,
    so the turn ends saying "the recording has no turn N"."""

    def __init__(self, *, session_id: str | None, log: str, call: CallKey, turns: int) -> None:
        said = (
            f"the recording has no turn {call.turn} ({log} holds {turns} turn{'' if turns == 1 else 's'}); "
            "a replay goes only as far as its recording"
        )
        asked = f"call {format_call(call)} of live session {session_id!r}"
        Exception.__init__(self, f"replay mismatch: {asked}: {said}")
        self.session_id = session_id
        self.log = log
        self.call = call
        self.recorded = f"{turns} turn{'' if turns == 1 else 's'}"
        self.asked = asked
        self.failure = LlmFailure(message=said, code="REPLAY_ENDED")


class RecordingFailed(ReplayError):
    """A recording ran to its end and is not one to keep as a scenario: `problems` says what failed (a turn that
    ended in error, with its message and code; a scripted model whose replies did not match the calls made), and
    `logs` holds the logs made (the primary first), so a caller can keep them for a look."""

    def __init__(self, place: str, problems: list[str], logs: list[tuple[object, bytes]]) -> None:
        super().__init__(f"{place}: " + "; ".join(problems))
        self.place = place
        self.problems = problems
        self.logs = logs
