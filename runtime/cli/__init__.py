"""The `dsh` command's public names, and what plugins' commands (`dsh acp`) share with the core commands: the host
that loads a deployment over a session store, the common options, and the progress bars of long commands."""

from .app import app as app
from .app import main as main
from .host import Host as Host
from .host import open_host as open_host
from .options import ConfigOption as ConfigOption
from .options import CwdOption as CwdOption
from .options import ModelOption as ModelOption
from .options import ProviderOption as ProviderOption
from .options import ReplayOption as ReplayOption
from .options import SessionOption as SessionOption
from .options import StoreOption as StoreOption
from .progress import ByteProgress as ByteProgress
from .progress import count_progress as count_progress
from .progress import terminal_stderr as terminal_stderr

__all__ = [
    "ByteProgress",
    "ConfigOption",
    "CwdOption",
    "Host",
    "ModelOption",
    "ProviderOption",
    "ReplayOption",
    "SessionOption",
    "StoreOption",
    "app",
    "count_progress",
    "main",
    "open_host",
    "terminal_stderr",
]
