"""`ReplayAdapter`: the replay transport. It implements dsh.runtime.llm's `LlmAdapter` and serves each live call the
chunks recorded for it, by session and call key, never reading the request's system prompt or tools, and its messages
only to fill a `{{fromRequest:<regex>}}` placeholder the entry holds (`_placeholders`).

Binding live sessions to recorded logs: the first live session to call (one with no live parent) binds to the
primary log. A live child session (its `parent_id` is a bound live session) binds to a recorded child of its
parent's log: by `spawned_by` (turn, step, call id) when the live session has one and the recording stores it, so
concurrent siblings bind the same way every run; otherwise by first-call order (the next unbound child, ordered by
`createdAt`, then id). The adapter learns a live session's parent, `spawned_by` and cwd through `sessions`: a
`SessionStore` (its `info`), or any callable from a session id to a `SessionInfo`.

Within a bound log, a call is served the first unserved entry recorded at its key `request.call`; a call without a
key (an auxiliary call) is served the next unserved entry in recorded order, as the original served every call.
Every `ReplayMismatch` is raised inside the call's stream (where `LlmRuntime` turns it into `finish{error}`, as for
any adapter failure) and kept: `assert_consumed()` raises the first one, then checks every entry was served.

A hang override touches its ready file (in the live session's cwd) for a driver waiting on it, and removes it
when the hang is cancelled, so a replayed chat leaves the workspace as it was.

The adapter states the context window the recording's `request/context` stated for a route (`context_window`), so a
replay logs the `request/context` the recording logged.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio

from dsh.runtime.llm import (
    BlockEnd,
    CallKey,
    LlmCallError,
    LlmFailure,
    LlmRequest,
    StreamChunk,
    ToolCallBlock,
    ToolCallDelta,
)
from dsh.runtime.session import SessionInfo, SessionStoreProtocol

from ..recordings._errors import RecordingEnded, ReplayMismatch, format_call
from ..recordings._placeholders import PlaceholderError, from_request, with_cwd
from ..script._recording import Recording
from ..script._script import Hang, Script, ScriptEntry, Throw

__all__ = ["ReplayAdapter", "SessionLookup", "called_tools", "hang"]

SessionLookup = Callable[[str], SessionInfo]


class _Log:
    """One recorded log's cursor: which live session it is bound to and which of its entries were served."""

    __slots__ = ("asked", "bound", "by_key", "cwd", "live", "parent", "script", "served")

    def __init__(self, script: Script) -> None:
        self.script = script
        self.served = [False] * len(script.entries)
        self.by_key: dict[CallKey, list[int]] = {}
        for index, entry in enumerate(script.entries):
            self.by_key.setdefault(entry.call, []).append(index)
        self.bound = False
        self.live: str | None = None
        self.cwd: str | None = None
        self.parent: _Log | None = None
        self.asked: list[CallKey | None] = []

    @property
    def name(self) -> str:
        return self.script.log.name

    def next_unserved(self) -> int | None:
        return next((i for i, done in enumerate(self.served) if not done), None)

    def describe(self) -> str:
        spawned = self.script.log.spawned_by
        by = "" if spawned is None else f", spawned by ({spawned.turn},{spawned.step},{spawned.call_id})"
        state = f'bound to live session "{self.live}"' if self.bound else "unbound"
        return f"{self.name} ({len(self.served)} entries{by}; {state})"


def _seed(workspace: Path, cwd: Path) -> None:
    """Copy the recording's `workspace` into `cwd` when `cwd` is empty or missing (a cwd holding anything is the
    user's: left as it is). Before the session's first model call, so before any of its tools runs."""
    if cwd.exists() and any(cwd.iterdir()):
        return
    shutil.copytree(workspace, cwd, symlinks=True, dirs_exist_ok=True)


def _asked(calls: list[CallKey | None]) -> str:
    return ", ".join(format_call(call) for call in calls) or "nothing"


class ReplayAdapter:
    """Serves a `Recording` to a live run. `sessions` tells the adapter each live session's parent, `spawned_by` and
    cwd (a `SessionStore`, or a lookup callable); `pace_ms` sleeps that long before each chunk (cancellable)."""

    def __init__(
        self,
        recording: Recording,
        *,
        sessions: SessionStoreProtocol | SessionLookup,
        pace_ms: float = 0.0,
        workspace: str | Path | None = None,
    ) -> None:
        if not pace_ms >= 0:
            raise ValueError(f"pace_ms must be >= 0, got {pace_ms}")
        self.recording = recording
        self._workspace = None if workspace is None else Path(workspace)
        self._lookup: SessionLookup = sessions if callable(sessions) else sessions.info
        self._pace = pace_ms / 1000
        self._logs = [_Log(script) for script in recording.scripts]
        ids = [log.script.log.id for log in self._logs]
        if len(set(ids)) == len(
            ids
        ):  # ids can link children to parents (placeholders like {{sessionId}} cannot)
            by_id = {log.script.log.id: log for log in self._logs}
            for log in self._logs[1:]:
                parent_id = log.script.log.parent_id
                log.parent = None if parent_id is None else by_id.get(parent_id)
        self._live: dict[str | None, _Log] = {}
        self._mismatches: list[ReplayMismatch] = []

    # ------------------------------------------------------------ binding

    def bindings(self) -> dict[str | None, str]:
        """Live session id -> the recorded log it is bound to."""
        return {live: log.name for live, log in self._live.items()}

    def bound_log(self, session_id: str) -> str | None:
        """The name of the recorded log live session `session_id` is bound to, binding it now if it is not yet (as
        its first call would); None when no recorded log is left for it (its first call will say so)."""
        log = self._live.get(session_id)
        if log is not None:
            return log.name
        kept = len(self._mismatches)
        try:
            return self._bind(session_id, None).name
        except ReplayMismatch:  # not an error yet: the session may never call; if it does, its call raises it
            del self._mismatches[kept:]
            return None

    def _mismatch(self, error: ReplayMismatch) -> ReplayMismatch:
        self._mismatches.append(error)
        return error

    def report(self, error: ReplayMismatch) -> None:
        """Keep a divergence found outside a model call (a recorded tool's call that does not match the recording),
        so `assert_consumed` raises it in the order the run met it."""
        self._mismatch(error)

    def _bind(self, session_id: str | None, call: CallKey | None) -> _Log:
        log = self._live.get(session_id)
        if log is not None:
            return log
        info = None if session_id is None else self._lookup(session_id)
        parent = None if info is None or info.parent_id is None else self._live.get(info.parent_id)
        spawned = None if info is None else info.spawned_by
        asked = f"call {format_call(call)} of live session {session_id!r}"
        target: _Log | None
        if parent is None:
            root = self._logs[0]
            target = None if root.bound else root
            why = f"the primary log {root.name} is already bound to live session {root.live!r}"
            if info is not None and info.parent_id is not None:
                why += (
                    f"; its parent {info.parent_id!r} has made no call, so it was taken for a primary session"
                )
        else:
            pool = [
                log
                for log in self._logs[1:]
                if not log.bound and (log.parent is None or log.parent is parent)
            ]
            if spawned is not None and any(log.script.log.spawned_by is not None for log in pool):
                target = next((log for log in pool if log.script.log.spawned_by == spawned), None)
                why = (
                    f"no unbound child log of {parent.name} was spawned by "
                    f"({spawned.turn},{spawned.step},{spawned.call_id})"
                )
            else:
                target = pool[0] if pool else None
                why = f"every child log of {parent.name} is already bound"
        if target is None:
            listing = "; ".join(log.describe() for log in self._logs)
            raise self._mismatch(
                ReplayMismatch(
                    f"replay mismatch: live session {session_id!r} has no recorded log ({why}); it asked for "
                    f"{format_call(call)}. Recorded logs: {listing}",
                    session_id=session_id,
                    log=None,
                    call=call,
                    recorded=listing,
                    asked=asked,
                )
            )
        target.bound = True
        target.live = session_id
        target.cwd = None if info is None else info.cwd
        self._live[session_id] = target
        if target is self._logs[0] and self._workspace is not None and target.cwd is not None:
            _seed(self._workspace, Path(target.cwd))
        return target

    def _claim(self, request: LlmRequest) -> tuple[_Log, ScriptEntry]:
        call = request.call
        log = self._bind(request.session_id, call)
        log.asked.append(call)
        if call is None:
            index = log.next_unserved()
            recorded_there = "(a call without a key is served the next entry in recorded order)"
        else:
            at = log.by_key.get(call, [])
            index = next((i for i in at if not log.served[i]), None)
            recorded_there = (
                "; ".join(f"{log.script.entries[i].describe()} (already served)" for i in at)
                or f"nothing is recorded at {format_call(call)}"
            )
        if index is None:
            past = self._past_the_recording(log, request)
            if past is not None:
                raise past
            following = log.next_unserved()
            upcoming = (
                "every entry has been served"
                if following is None
                else f"the next unserved entry is {log.script.entries[following].describe()}"
            )
            asked = (
                f"call {format_call(call)} of live session {request.session_id!r} "
                f"(provider {request.provider!r}, model {request.model!r})"
            )
            raise self._mismatch(
                ReplayMismatch(
                    f"replay mismatch: {asked} has no recorded entry in {log.name}: {recorded_there}; {upcoming}",
                    session_id=request.session_id,
                    log=log.name,
                    call=call,
                    recorded=f"{recorded_there}; {upcoming}",
                    asked=asked,
                )
            )
        log.served[index] = True
        return log, log.script.entries[index]

    def _past_the_recording(self, log: _Log, request: LlmRequest) -> RecordingEnded | None:
        """A step call of a turn after every recorded one: the run went past the recording (a replayed chat typed
        one more line, or resumed a replayed session). The mismatch is kept for `assert_consumed`; the turn fails
        with one line saying so."""
        call = request.call
        turns = [entry.call.turn for entry in log.script.entries]
        if call is None or call.purpose != "step" or not turns or call.turn <= max(turns):
            return None
        ended = RecordingEnded(session_id=request.session_id, log=log.name, call=call, turns=len(set(turns)))
        self._mismatch(ended)
        return ended

    # ------------------------------------------------------------ serving

    def context_window(self, provider: str, model: str) -> int | None:
        """The window the recording's `request/context` stated for (`provider`, `model`); None when it stated none."""
        return self.recording.context_window(provider, model)

    def claim(self, request: LlmRequest) -> tuple[str | None, ScriptEntry, tuple[StreamChunk, ...]]:
        """Serve `request` the entry recorded for it: the session's cwd, the entry, and its chunks with placeholders
        resolved against the live request. Raises (and keeps) a `ReplayMismatch` when nothing is recorded for it."""
        log, entry = self._claim(request)
        asked = f"call {format_call(request.call)} of live session {request.session_id!r}"
        chunks = entry.chunks if log.cwd is None else with_cwd(entry.chunks, log.cwd)
        try:
            return log.cwd, entry, from_request(chunks, request.messages)
        except PlaceholderError as error:
            raise self._mismatch(
                ReplayMismatch(
                    f"replay mismatch: {asked}: {entry.describe()}: {error.reason}",
                    session_id=request.session_id,
                    log=log.name,
                    call=request.call,
                    recorded=entry.describe(),
                    asked=asked,
                )
            ) from None

    async def stream(self, request: LlmRequest) -> AsyncIterator[StreamChunk]:
        """The recorded chunks of `request.call` in `request.session_id`'s log; then the override's ending, if any."""
        cwd, entry, chunks = self.claim(request)
        for chunk in chunks:
            if self._pace:
                await anyio.sleep(self._pace)
            yield chunk
        if isinstance(entry.end, Throw):
            raise LlmCallError(LlmFailure(message=entry.end.message, code=entry.end.code))
        if isinstance(entry.end, Hang):
            await hang(entry.end, cwd)

    # ------------------------------------------------------------ the end of a run

    def assert_consumed(self) -> None:
        """Raise the first `ReplayMismatch` of the run, if any; else raise one if a recorded log was never bound or
        an entry was never served (the live run made fewer calls than were recorded)."""
        if self._mismatches:
            raise self._mismatches[0]
        problems: list[str] = []
        first: tuple[_Log, ScriptEntry] | None = None
        for log in self._logs:
            unserved = [e for e, done in zip(log.script.entries, log.served, strict=True) if not done]
            if not unserved:
                continue
            first = first or (log, unserved[0])
            served = len(log.served) - len(unserved)
            who = f'live session "{log.live}"' if log.bound else "no live session (never bound)"
            problems.append(
                f"{log.name} ({who}) consumed {served}/{len(log.served)}; never served: "
                + ", ".join(e.describe() for e in unserved)
                + f"; the live run asked for: {_asked(log.asked)}"
            )
        if first is not None:
            log, entry = first
            raise ReplayMismatch(
                "replay mismatch: the live run made fewer model calls than were recorded:\n  "
                + "\n  ".join(problems),
                session_id=log.live,
                log=log.name,
                call=entry.call,
                recorded=entry.describe(),
                asked=_asked(log.asked),
            )


async def hang(end: Hang, cwd: str | None) -> None:
    """A hang override's ending: touch its ready file (in the session's `cwd`) and wait until cancelled; the file is
    removed when the hang is over, so the workspace is left as it was (a chat's cwd is the user's)."""
    name = end.ready_file
    if name is None:
        await anyio.sleep_forever()
        return
    ready = Path(cwd or Path.cwd()) / name
    made = not ready.exists()
    await anyio.Path(ready.parent).mkdir(parents=True, exist_ok=True)
    await anyio.Path(ready).touch()
    try:
        await anyio.sleep_forever()
    finally:
        if made:  # the hang is over: the workspace is left as it was (a chat's cwd is the user's)
            ready.unlink(missing_ok=True)


def called_tools(chunks: tuple[StreamChunk, ...]) -> list[str]:
    """The names of the tools `chunks` call, in order, each once."""
    names: dict[str, None] = {}
    for chunk in chunks:
        if isinstance(chunk, ToolCallDelta) and chunk.name:
            names[chunk.name] = None
        elif isinstance(chunk, BlockEnd) and isinstance(chunk.block, ToolCallBlock):
            names[chunk.block.name] = None
    return list(names)
