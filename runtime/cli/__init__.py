"""The `dsh` command's public names, and what plugins' commands (`dsh acp`) share with the core commands: the host
that loads a deployment over a session store, and the common options."""

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

__all__ = [
    "ConfigOption",
    "CwdOption",
    "Host",
    "ModelOption",
    "ProviderOption",
    "ReplayOption",
    "SessionOption",
    "StoreOption",
    "app",
    "main",
    "open_host",
]
