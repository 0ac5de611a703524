"""`AgentState`: what an agent reads back from its own log, derived from it by a `LogFold` the agent opens its log
with (fed on open, then with every append): the latest request header and whether this run wrote it, the latest
request context, the runtime-context snapshots (`SNAPSHOT_FORM`), the inbox queues and the settled background jobs.
It keeps the inbox's rule: a splice must fit the queue it changes (`inbox.splice`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import msgspec

from dsh.runtime.llm import PluginSource, TextBlock, UserMessage
from dsh.runtime.session import (
    EpochHeader,
    Event,
    InboxSpliced,
    InboxSplicedData,
    InboxTarget,
    JobSettled,
    JobSettledData,
    LogRuleError,
    RequestContext,
    RequestContextData,
    RequestHeader,
    RequestHeaderData,
    SessionEndSeed,
    StoredEvent,
    SurfaceNode,
    ToolResultData,
    ToolResultEvent,
    UserMessageEvent,
)

__all__ = ["SNAPSHOT_FORM", "AgentState", "InboxItem"]

SNAPSHOT_FORM = "snapshot"
"""The `PluginSource.form` of a runtime-context snapshot message."""


@dataclass(frozen=True, slots=True)
class InboxItem:
    """One input waiting in an agent's inbox: the message and its JSON text as it was queued (a source the original
    writes with fields dsh does not model, `subagent-report{form, senderSessionId}`, enters the step unchanged)."""

    message: UserMessage
    raw: str


class _Inserted(msgspec.Struct):
    inserted: list[msgspec.Raw] = msgspec.field(default_factory=list)


_INSERTED = msgspec.json.Decoder(_Inserted)


class AgentState:
    """The agent's fold of its log (a `LogFold`): `header` (the latest `request/header` snapshot) and `header_seq`,
    `seed_end` (the last `session/end-seed`), `request_context`, `inbox` (each queue's waiting input, oldest first)
    and `settled_jobs` (the ids of the background jobs whose `job/settled` the log holds). The snapshot on the
    surface is read against the log's surface nodes (`snapshot_on`): a replace may shadow the node that carried it."""

    types: ClassVar[tuple[type[Event], ...]] = (
        RequestHeader,
        RequestContext,
        SessionEndSeed,
        InboxSpliced,
        JobSettled,
        UserMessageEvent,
        ToolResultEvent,
    )

    def __init__(self) -> None:
        self.header: EpochHeader | None = None
        self.header_seq: int | None = None
        self.seed_end: int | None = None
        self.request_context: RequestContextData | None = None
        self.inbox: dict[InboxTarget, list[InboxItem]] = {"next-turn": [], "next-step": []}
        self.settled_jobs: set[str] = set()
        self._snapshots: dict[int, str] = {}  # seq of a user/message carrying a snapshot -> its text

    @property
    def header_written(self) -> bool:
        """Whether the latest request header was written by this run (after the last `session/end-seed`)."""
        return self.header_seq is not None and (self.seed_end is None or self.header_seq > self.seed_end)

    def snapshot_on(self, surface: Sequence[SurfaceNode]) -> str | None:
        """The text of the newest runtime-context snapshot on `surface`, the log's nodes (None: none is)."""
        if not self._snapshots:
            return None
        for node in reversed(surface):
            text = self._snapshots.get(node.seq)
            if text is not None:
                return text
        return None

    def check(self, event: StoredEvent, data: object) -> None:
        """The inbox's rule: a splice must fit the queue it changes."""
        if isinstance(data, InboxSplicedData):
            queue = self.inbox[data.target]
            removed = data.removed_count or 0
            if not 0 <= data.start <= len(queue) or removed < 0 or data.start + removed > len(queue):
                raise LogRuleError(
                    f"agent/inbox/spliced start {data.start} removedCount {removed} is outside the {data.target} "
                    f"queue, which holds {len(queue)} item(s)",
                    rule="inbox.splice",
                    seq=event.seq,
                )

    def feed(self, event: StoredEvent, data: object) -> None:
        """Fold in one event the log's rules and `check` accepted."""
        if isinstance(data, RequestHeaderData):
            self.header, self.header_seq = data.header, event.seq
        elif isinstance(data, RequestContextData):
            self.request_context = data
        elif event.type == SessionEndSeed.TAG:
            self.seed_end = event.seq
        elif isinstance(data, InboxSplicedData):
            self._splice(event, data)
        elif isinstance(data, JobSettledData):
            self.settled_jobs.add(data.job_id)
        elif isinstance(data, UserMessage | ToolResultData):
            text = _snapshot_of(data if isinstance(data, UserMessage) else data.message)
            if text is not None:
                self._snapshots[event.seq] = text

    def _splice(self, event: StoredEvent, data: InboxSplicedData) -> None:
        removed = data.removed_count or 0
        raws = _INSERTED.decode(event.data).inserted if data.inserted else []
        items = [
            InboxItem(message, bytes(raw).decode()) for message, raw in zip(data.inserted, raws, strict=True)
        ]
        self.inbox[data.target][data.start : data.start + removed] = items


def _snapshot_of(message: UserMessage) -> str | None:
    source = message.source
    if not isinstance(source, PluginSource) or source.form != SNAPSHOT_FORM:
        return None
    return "".join(b.text for b in message.content if isinstance(b, TextBlock))
