"""The stable error codes the file tools return to the model, and `FsError`, which carries one out of a tool."""

from __future__ import annotations

from dsh.runtime.kernel.errors import ToolError

__all__ = [
    "AMBIGUOUS_MATCH",
    "BINARY_FILE",
    "EMPTY_OLD_STRING",
    "FILE_NOT_FOUND",
    "INVALID_PATH",
    "INVALID_PATTERN",
    "IO_ERROR",
    "LIMIT_TOO_LARGE",
    "NOT_A_DIRECTORY",
    "NOT_A_FILE",
    "NO_CHANGE",
    "NO_MATCH",
    "OFFSET_OUT_OF_RANGE",
    "PATH_OUTSIDE_WORKSPACE",
    "PERMISSION_DENIED",
    "UNSUPPORTED_PATTERN",
    "FsError",
]

PATH_OUTSIDE_WORKSPACE = "PATH_OUTSIDE_WORKSPACE"
"""The path (after `..` and symlinks) lies outside the workspace root."""
INVALID_PATH = "INVALID_PATH"
"""The path cannot name a file at all (an embedded NUL byte)."""
FILE_NOT_FOUND = "FILE_NOT_FOUND"
NOT_A_FILE = "NOT_A_FILE"
"""A file operation was given a directory (or a device, a socket...)."""
NOT_A_DIRECTORY = "NOT_A_DIRECTORY"
"""A search was given a file where it needs a directory, or a parent path component is a file."""
BINARY_FILE = "BINARY_FILE"
"""The file is not UTF-8 text."""
LIMIT_TOO_LARGE = "LIMIT_TOO_LARGE"
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
NO_MATCH = "NO_MATCH"
"""edit: old_string does not occur in the file."""
AMBIGUOUS_MATCH = "AMBIGUOUS_MATCH"
"""edit: old_string occurs more than once and replace_all is false."""
NO_CHANGE = "NO_CHANGE"
"""edit: old_string and new_string are equal."""
EMPTY_OLD_STRING = "EMPTY_OLD_STRING"
INVALID_PATTERN = "INVALID_PATTERN"
"""glob or grep: the pattern (or include glob) does not compile."""
UNSUPPORTED_PATTERN = "UNSUPPORTED_PATTERN"
"""grep: a valid regular expression that needs backtracking (backreferences, lookaround), which the linear-time
engine does not run."""
PERMISSION_DENIED = "PERMISSION_DENIED"
IO_ERROR = "IO_ERROR"
"""Any other operating-system failure; the message carries the system's reason."""


class FsError(ToolError):
    """A file tool refused or failed a call; `code` is one of this module's constants and the message is what the
    model reads."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
