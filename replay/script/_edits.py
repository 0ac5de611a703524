"""Recorded context edits: a checkpoint a recording's own test plugin logged while a tool ran (a `user/message` that
replaces surface nodes, between a step's tool calls and a result, such as the original's snapshot compaction of the
workspace-instruction baseline). No dsh plugin edits the conversation there, so a re-run re-applies the edit at the
same place, after the same call ran and before its result, replacing the live messages equal to the ones it
replaced: what later steps derive from the conversation (instructions re-sent once their baseline is gone) then
happens as it did when recording."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from dsh.runtime.llm import MessageId, UserMessage
from dsh.runtime.session import Replace, StepEnd, ToolCall, ToolResultEvent, UserMessageEvent
from dsh.runtime.tools import ToolContext

from ..recordings._errors import ReplayMismatch, ScriptError
from ..recordings._placeholders import CWD_PLACEHOLDER
from ..recordings._source import RecordedLog

__all__ = ["Edit", "apply_edits", "recorded_edits"]


@dataclass(frozen=True, slots=True)
class Edit:
    """One recorded edit: the message it put in place of `replaced` (the recorded user messages it shadows, in
    order), and where it is in the recording."""

    message: UserMessage
    replaced: tuple[UserMessage, ...]
    place: str


def recorded_edits(log: RecordedLog) -> dict[tuple[int, int, str], list[Edit]]:
    """The edits logged while a step's tools ran, by the (turn, step, call id) of the result they precede."""
    users: dict[int, UserMessage] = {}
    edits: dict[tuple[int, int, str], list[Edit]] = {}
    pending: list[Edit] = []
    running: tuple[int, int] | None = None
    for event, line in log.events():
        if event.seq < log.info.seed_length or event.type not in (
            UserMessageEvent.TAG,
            ToolCall.TAG,
            ToolResultEvent.TAG,
            StepEnd.TAG,
        ):
            continue
        view = event.view()
        if isinstance(view, UserMessageEvent):
            op = view.surface_op
            if not isinstance(op, Replace) or running is None:
                users[event.seq] = view.data
                continue
            shadowed = view.source_event_seqs or ()
            missing = [seq for seq in shadowed if seq not in users]
            if not shadowed or missing:
                raise ScriptError(
                    f"a checkpoint logged while tools ran replaces {list(shadowed)}, and a re-run can re-apply "
                    f"only one that replaces user messages (not {missing or 'nothing'})",
                    place=log.place(event, line),
                )
            pending.append(Edit(view.data, tuple(users[seq] for seq in shadowed), log.place(event, line)))
        elif isinstance(view, ToolCall):
            running = (view.data.turn, view.data.step)
        elif isinstance(view, ToolResultEvent):
            if pending:
                call = next(b.tool_call_id for b in view.data.message.content if hasattr(b, "tool_call_id"))
                edits.setdefault((view.data.turn, view.data.step, call), []).extend(pending)
                pending = []
        elif isinstance(view, StepEnd):
            running, pending = None, []
    return edits


def _same(live: UserMessage, recorded: UserMessage, cwd: str) -> bool:
    def body(message: UserMessage) -> bytes:
        return msgspec.json.encode((message.content, message.source))

    return body(live).replace(cwd.encode(), CWD_PLACEHOLDER.encode()) == body(recorded)


async def apply_edits(edits: list[Edit], context: ToolContext) -> ReplayMismatch | None:
    """Append `edits` to the live session of a tool's `context`; a mismatch (a replaced message the re-run never
    sent) is returned, not raised, and nothing is appended for it."""
    assert context.log is not None
    assert context.agent is not None
    log, agent, cwd = context.log, context.agent, str(context.cwd)
    info = log.info
    for edit in edits:
        live = [
            (event.seq, event.view().data)
            for event in log.store.events(info.id, start=info.seed_length or 0, types=(UserMessageEvent,))
        ]
        seqs: list[int] = []
        for wanted in edit.replaced:
            seq = next(
                (
                    s
                    for s, data in live
                    if s not in seqs and isinstance(data, UserMessage) and _same(data, wanted, cwd)
                ),
                None,
            )
            if seq is None:
                shown = msgspec.json.encode(wanted.content).decode()[:300]
                return ReplayMismatch(
                    f"replay mismatch: the checkpoint at {edit.place} replaces a message the re-run never sent: "
                    f"{shown}",
                    session_id=info.id,
                    log=None,
                    call=None,
                    recorded=shown,
                    asked="(no such message in the re-run)",
                )
            seqs.append(seq)
        message = UserMessage(
            id=MessageId(log.ids.new_id("message")), content=edit.message.content, source=edit.message.source
        )
        await agent.append(
            UserMessageEvent(
                data=message,
                surface_op=Replace(start=min(seqs), end=max(seqs)),
                source_event_seqs=tuple(seqs),
            )
        )
    return None
