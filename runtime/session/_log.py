"""`SessionLog`: appending to one session with group commit. `append` checks the event, assigns its seq and returns
at once; a writer task commits whatever is pending in one transaction off the event loop;
`await flush()` returns once everything appended so far is durable. The log holds its session's lease while it is
open (renewed in the background, checked in every commit), so no other process writes or repairs it meanwhile."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread

from ._errors import SessionBusyError
from ._events import Event, StoredEvent
from ._fold import LogFold
from ._repair import load_state, resume
from ._rules import LogState
from .store._base import Lease, SessionInfo
from .store._protocol import SessionStoreProtocol
from .store._rows import EventRow, event_row

__all__ = ["SessionLog", "open_log"]

# the sessions each store has an open log for, in this process (one writer per session)
_WRITERS: weakref.WeakKeyDictionary[SessionStoreProtocol, set[str]] = weakref.WeakKeyDictionary()


class SessionLog:
    """The append side of one session's log. Create it with `open_log`; one writer per session at a time.

    `clock` and `ids` are the session's own view of the store's clock and id minter (`SessionStore.session_clock`,
    `session_ids`): the times of its events and the ids of the records logged in it come from them."""

    def __init__(
        self,
        store: SessionStoreProtocol,
        info: SessionInfo,
        state: LogState,
        conn: Any,  # the connection `store.connect()` made: the store takes back its own
        lease: Lease | None = None,
    ) -> None:
        self.store = store
        self.info = info
        self._lease = lease
        self._state = state
        self._conn = conn
        self._pending: list[EventRow] = []
        self._durable = state.next_seq
        self._wake = anyio.Event()
        self._progress = anyio.Event()
        self._failure: BaseException | None = None
        self._stopped = False
        self.clock = store.session_clock(info.id)
        self.ids = store.session_ids(info.id)

    @property
    def lease(self) -> Lease | None:
        """The session's lease this log holds (None: a log made without one)."""
        return self._lease

    @property
    def next_seq(self) -> int:
        """The seq the next appended event gets."""
        return self._state.next_seq

    @property
    def durable_seq(self) -> int:
        """Every event with a smaller seq is committed."""
        return self._durable

    @property
    def state(self) -> LogState:
        """The rule state after the last appended event (open turn, surface, ...); the folds the log was opened
        with are fed from it."""
        return self._state

    def append(self, event: Event, *, written: str | None = None) -> StoredEvent:
        """Check `event` against the log's rules, give it the next seq and the clock's time, and queue it for
        commit. Returns at once; `await flush()` makes it durable. The stored event keeps `event` as its typed
        value, so nothing is decoded back. `written` is the data's JSON text when the writer must keep fields dsh
        does not model (a pruned copy of a recorded event); it must decode to `event.data`. An event the rules or a
        fold refuse raises `LogRuleError` and is not logged."""
        if self._failure is not None:
            raise self._failure
        state = self._state
        stored = StoredEvent.from_event(event, seq=state.next_seq, time=self.clock.now_ms(), data=written)
        state.feed(stored, data=event.data)
        self._pending.append(event_row(self.info.id, stored))
        if not self._wake.is_set():  # one wake-up per batch: setting it again costs a call per chunk
            self._wake.set()
        return stored

    async def flush(self) -> None:
        """Return once every event appended so far is committed (the durability barrier)."""
        target = self._state.next_seq
        while self._durable < target:
            if self._failure is not None:
                raise self._failure
            if self._stopped:
                # the writer was cancelled with the block's caller (a subagent cancelled by its parent) while the
                # caller still closes its turn under a shield: commit here, blocking, as on the error path
                self._commit_rest()
                if self._durable < target:
                    raise RuntimeError(
                        f"the log writer of {self.info.id} stopped with events still in flight"
                    )
                return
            progress = self._progress
            self._wake.set()
            await progress.wait()

    def _commit_rest(self) -> None:
        """Commit what is still pending once the writer task is gone (blocking: error and cancellation paths)."""
        if self._pending and self._failure is None:
            batch, self._pending = self._pending, []
            self.store.insert_rows(self._conn, batch, lease=self._lease)
            self._durable = batch[-1][1] + 1

    def _insert(self, batch: list[EventRow]) -> None:
        self.store.insert_rows(self._conn, batch, lease=self._lease)

    async def _keep_lease(self, lease: Lease) -> None:
        """Renew the lease every third of its TTL while the log is open. A lease found lost becomes the failure
        every later append and flush raise (the writer's next commit would refuse all the same)."""
        while self._failure is None:
            await anyio.sleep(self.store.lease_ttl_ms / 3000)
            try:
                await anyio.to_thread.run_sync(self.store.renew_lease, lease)
            except Exception as error:  # handed to every later append/flush of this log, raised there
                self._failure = error
                self._progress.set()
                return

    async def _run(self) -> None:
        try:
            await self._write_loop()
        finally:
            self._stopped = True
            self._progress.set()

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    await anyio.to_thread.run_sync(self._insert, batch)
                except anyio.get_cancelled_exc_class():
                    # cancelled before the thread started (once started, the insert is waited for): the batch is
                    # still uncommitted, so it goes back for `_commit_rest` to write
                    self._pending[:0] = batch
                    raise
                except Exception as error:  # handed to every later append/flush of this log, raised there
                    self._failure = error
                    self._progress.set()
                    return
                self._durable = batch[-1][1] + 1
                progress, self._progress = self._progress, anyio.Event()
                progress.set()


@asynccontextmanager
async def open_log(
    store: SessionStoreProtocol,
    session_id: str,
    *,
    repair: bool = True,
    folds: Sequence[LogFold] = (),
) -> AsyncIterator[SessionLog]:
    """Run a group-commit writer for `session_id` while the block runs; everything appended is flushed on exit.

    With `repair` (the default) the log is resumed first: an open last turn is closed and `session/end-seed` marks
    where this run's events begin. Without it, the log must not end inside a turn another writer left open.
    `folds` are fed the stored events (and the repair's) as the log opens, then every event appended.
    """
    info = store.info(session_id)
    writers = _WRITERS.setdefault(store, set())
    if session_id in writers:
        raise SessionBusyError(session_id)
    writers.add(session_id)
    try:
        # the lease first: repair, like every write, runs only for the one process that holds it
        lease = store.acquire_lease(session_id)
        try:
            state = (
                resume(store, session_id, lease=lease, folds=folds)[0]
                if repair
                else load_state(store, session_id, folds=folds)
            )
            conn = store.connect()
            log = SessionLog(store, info, state, conn, lease)
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(log._run)
                    group.start_soon(log._keep_lease, lease)
                    yield log
                    await log.flush()
                    group.cancel_scope.cancel()
            except BaseExceptionGroup as grouped:
                # the writer and lease tasks never raise (they hand failures to append/flush), so the group holds
                # only the caller's own exception: give it back unwrapped
                if len(grouped.exceptions) == 1:
                    raise grouped.exceptions[0] from grouped
                raise
            finally:
                log._commit_rest()
                conn.close()
        finally:
            store.release_lease(lease)
    finally:
        writers.discard(session_id)
