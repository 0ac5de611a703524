"""The session log's errors, all under `dsh.runtime.kernel.errors.SessionError`; each carries a stable `code`."""

from __future__ import annotations

from datetime import UTC, datetime

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

    def __init__(self, session_id: str, *, after: int, next: int) -> None:
        missing = f"seq {after + 1}" if next == after + 2 else f"seqs {after + 1}..{next - 1}"
        where = "the log starts at" if after < 0 else f"seq {after} is followed by"
        super().__init__(
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
