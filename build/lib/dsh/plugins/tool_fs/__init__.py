"""The file tools (`read`, `write`, `edit`, `glob`, `grep`), confined to the workspace root."""

from .config import ALL_TOOLS as ALL_TOOLS
from .config import Config as Config
from .config import ToolName as ToolName
from .errors import AMBIGUOUS_MATCH as AMBIGUOUS_MATCH
from .errors import BINARY_FILE as BINARY_FILE
from .errors import EMPTY_OLD_STRING as EMPTY_OLD_STRING
from .errors import FILE_NOT_FOUND as FILE_NOT_FOUND
from .errors import INVALID_PATH as INVALID_PATH
from .errors import INVALID_PATTERN as INVALID_PATTERN
from .errors import IO_ERROR as IO_ERROR
from .errors import LIMIT_TOO_LARGE as LIMIT_TOO_LARGE
from .errors import NO_CHANGE as NO_CHANGE
from .errors import NO_MATCH as NO_MATCH
from .errors import NOT_A_DIRECTORY as NOT_A_DIRECTORY
from .errors import NOT_A_FILE as NOT_A_FILE
from .errors import OFFSET_OUT_OF_RANGE as OFFSET_OUT_OF_RANGE
from .errors import PATH_OUTSIDE_WORKSPACE as PATH_OUTSIDE_WORKSPACE
from .errors import PERMISSION_DENIED as PERMISSION_DENIED
from .errors import UNSUPPORTED_PATTERN as UNSUPPORTED_PATTERN
from .errors import FsError as FsError
from .globs import GlobMatcher as GlobMatcher
from .paths import Workspace as Workspace
from .plugin import plugin as plugin
from .plugin import tools as tools
from .sections import SECTIONS as SECTIONS

__all__ = [
    "ALL_TOOLS",
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
    "SECTIONS",
    "UNSUPPORTED_PATTERN",
    "Config",
    "FsError",
    "GlobMatcher",
    "ToolName",
    "Workspace",
    "plugin",
    "tools",
]
