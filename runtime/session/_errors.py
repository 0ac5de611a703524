"""The session log's errors, all under `dsh.runtime.kernel.errors.SessionError`; each carries a stable `code`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import ClassVar

from dsh.runtime.kernel.errors import SessionError

__all__ = [
    "InvalidBoundaryError",
    "LeaseLostError",
    "LogFormatError",
    "LogGapError",
    "LogRuleError",
    "OpenTurnError",
    "SessionBusyError",
    "SessionExistsError",
    "SessionInUseError",
    "SessionNotFoundError",
    "StoreConnectError",
    "StoreError",
    "StoreRowError",
    "StoreSchemaError",
    "UnsupportedVersionError",
]


class LogFormatError(SessionError, ValueError):
    """A JSONL log (or one line of it) is malformed; `line` is 1-based (the header is line 1), `rule` names the
    rule it breaks."""

    code = "BAD_LOG"

    def __init__(self, message: str, *, rule: str, line: int | None = None, file: str = "") -> None:
        where = (
            f"{file}:{line}" if file and line is not None else (f"line {line}" if line is not None else file)
        )
        super().__init__(f"{where}: {message} [{rule}]" if where else f"{message} [{rule}]")
        self.reason = message
        self.rule = rule
        self.line = line
        self.file = file


class UnsupportedVersionError(LogFormatError):
    """The header's `version` is not the format version dsh reads (0)."""

    code = "UNSUPPORTED_VERSION"


class LogRuleError(SessionError, ValueError):
    """An event would break a rule of the log (envelope, surface, seq); raised on append and by import's checks."""

    code = "LOG_RULE"

    def __init__(self, message: str, *, rule: str, seq: int | None = None) -> None:
        super().__init__(f"event seq {seq}: {message} [{rule}]" if seq is not None else f"{message} [{rule}]")
        self.reason = message
        self.rule = rule
        self.seq = seq


class SessionNotFoundError(SessionError, LookupError):
    """No session with this id in the store."""

    code = "SESSION_NOT_FOUND"

    def __init__(self, session_id: str, *, store: str = "") -> None:
        super().__init__(
            f'no session "{session_id}" in {store or "the store"}; `dsh sessions list` shows them'
        )
        self.session_id = session_id


class SessionExistsError(SessionError):
    """A session id that should be new is taken."""

    code = "SESSION_ALREADY_EXISTS"

    def __init__(self, session_id: str) -> None:
        super().__init__(f'session "{session_id}" already exists; choose another id')
        self.session_id = session_id


class InvalidBoundaryError(SessionError, ValueError):
    """A fork boundary is not the seq of an event of the source session."""

    code = "INVALID_BOUNDARY"

    def __init__(self, session_id: str, at: int, length: int) -> None:
        valid = f"0..{length - 1}" if length else "none (the session is empty)"
        super().__init__(f'cannot fork session "{session_id}" at seq {at}: valid boundaries are {valid}')
        self.session_id = session_id
        self.at = at
        self.length = length


class OpenTurnError(SessionError, ValueError):
    """A fork prefix would end inside an open turn."""

    code = "OPEN_TURN"

    def __init__(self, session_id: str, at: int, turn_start_seq: int) -> None:
        super().__init__(
            f'cannot fork session "{session_id}" at seq {at}: the prefix ends inside the turn opened at seq '
            f"{turn_start_seq}; fork at its turn/end or before its turn/start"
        )
        self.session_id = session_id
        self.at = at
        self.turn_start_seq = turn_start_seq


class StoreSchemaError(SessionError):
    """The SQLite file's schema is newer than this dsh, or not a dsh store."""

    code = "STORE_SCHEMA"


class SessionBusyError(SessionError):
    """A session already has a writer in this process (one writer per session)."""

    code = "SESSION_BUSY"

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f'session "{session_id}" already has an open log in this process; append through that one'
        )
        self.session_id = session_id


class SessionInUseError(SessionError):
    """Another process holds the session's lease (one writer per session, across processes): it is refused until
    the holder closes it, its pid is dead on this host, or its lease expires. `since` is when it took the lease."""

    code = "SESSION_IN_USE"

    def __init__(self, session_id: str, *, pid: int, host: str, since: datetime) -> None:
        when = since.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        super().__init__(f"session {session_id} is in use by pid {pid} on {host} since {when}")
        self.session_id = session_id
        self.pid = pid
        self.host = host
        self.since = since


class LogGapError(SessionError):
    """A stored log skips seqs (written by something other than dsh, or before the schema refused it): reading it
    would hand the loop a history with a hole. `after` is the last seq before the gap (-1: the gap opens the log),
    `next` the first seq after it."""

    code = "LOG_GAP"

    def __init__(self, session_id: str, *, after: int, next: int, store: str = "") -> None:
        missing = f"seq {after + 1}" if next == after + 2 else f"seqs {after + 1}..{next - 1}"
        where = "the log starts at" if after < 0 else f"seq {after} is followed by"
        super().__init__(
            f"{f'session store {store}: ' if store else ''}"
            f'session "{session_id}" has a gap in its log: {where} seq {next} ({missing} missing); dsh writes '
            "seqs contiguous from 0, so another client of the store wrote or removed events"
        )
        self.session_id = session_id
        self.after = after
        self.next = next


class LeaseLostError(SessionError):
    """This process's lease on a session expired and no process holds it now: another may have written since, so
    this writer takes no more events."""

    code = "LEASE_LOST"

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id}: this process's lease on it expired while it was stalled; its log takes no more "
            "events (open the session again to continue it)"
        )
        self.session_id = session_id


class StoreConnectError(SessionError, ConnectionError):
    """A store's database cannot be reached; `location` is printable (a URL without its password)."""

    code = "STORE_CONNECT"

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"cannot open the session store {location}: {reason}")
        self.location = location
        self.reason = reason


class StoreError(SessionError):
    """The store's database failed under dsh: it is damaged, read-only (its file or its mount), on a full disk,
    unreadable, or (PostgreSQL) its server stayed unreachable. `location` is printable (a URL without its password),
    `problem` names the kind (`damaged`, `read-only`, `full`, `io`, `cannot-open`, `locked`, `lost`, `failed`) and
    `detail` is the database's own word for it."""

    code = "STORE_FAILED"

    _SAYS: ClassVar[dict[str, tuple[str, str]]] = {
        "damaged": (
            "its database is damaged",
            "restore it from a backup, or recover what SQLite can still read (sqlite3 FILE .recover)",
        ),
        "read-only": (
            "it cannot be written: its file or the filesystem it is on is read-only",
            "make it writable, or pass another --store",
        ),
        "full": ("the disk it is on is full", "free space on that filesystem"),
        "io": ("reading or writing it failed (an I/O error)", "check the disk and the file"),
        "cannot-open": (
            "it cannot be opened",
            "check the file, its directory and their permissions (SQLite also writes FILE-wal and FILE-shm beside it)",
        ),
        "locked": ("it stayed locked by another process", "try again when the other writer is done"),
        "lost": (
            "the connection to its server was lost and could not be made again",
            "check that the server is up and reachable, then run the command again",
        ),
        "failed": ("its database failed", "see the database's message"),
    }

    def __init__(self, location: str, problem: str, detail: str) -> None:
        what, hint = self._SAYS.get(problem, self._SAYS["failed"])
        super().__init__(f"session store {location}: {what} ({detail}); {hint}")
        self.location = location
        self.problem = problem
        self.detail = detail


class StoreRowError(SessionError, ValueError):
    """A stored event's row is not one dsh writes (a `surface_op` that is neither `append` nor a replace, `data`
    that is not JSON, ...): another client of the store wrote it past the schema's checks (or before them)."""

    code = "BAD_ROW"

    def __init__(self, session_id: str, seq: int, reason: str, *, store: str = "") -> None:
        where = f"session store {store}: " if store else ""
        super().__init__(
            f'{where}session "{session_id}" event seq {seq} is not a row dsh writes ({reason}); another client of '
            "the store wrote it, so the log cannot be read past it"
        )
        self.session_id = session_id
        self.seq = seq
        self.reason = reason
