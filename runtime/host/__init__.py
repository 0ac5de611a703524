"""What every front end of dsh shares (the `dsh` command, `dsh acp` from plugins/acp, the replay driver): the host
lifecycle over a session store, which store to open, the terminal view of an agent's events, progress bars and the
common command options. Nothing here imports `dsh.runtime.cli`."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # the names for type checkers; at run time each is imported on first use
    from ._bundled import DEMO as DEMO
    from ._bundled import bundled_deployment as bundled_deployment
    from ._bundled import bundled_deployments as bundled_deployments
    from ._bundled import bundled_recording as bundled_recording
    from ._lifecycle import CONFIG_ENV as CONFIG_ENV
    from ._lifecycle import HOST_SERVICES as HOST_SERVICES
    from ._lifecycle import REPLAY_ENTRY_POINT_GROUP as REPLAY_ENTRY_POINT_GROUP
    from ._lifecycle import Host as Host
    from ._lifecycle import deployment_path as deployment_path
    from ._lifecycle import hosted as hosted
    from ._lifecycle import open_host as open_host
    from ._lifecycle import replayed as replayed
    from ._options import ConfigOption as ConfigOption
    from ._options import CwdOption as CwdOption
    from ._options import ModelOption as ModelOption
    from ._options import ProviderOption as ProviderOption
    from ._options import ReplayOption as ReplayOption
    from ._options import SessionOption as SessionOption
    from ._options import StoreOption as StoreOption
    from ._progress import ByteProgress as ByteProgress
    from ._progress import count_progress as count_progress
    from ._progress import terminal_stderr as terminal_stderr
    from ._stores import check_store_path as check_store_path
    from ._stores import default_store_path as default_store_path
    from ._stores import existing_store_file as existing_store_file
    from ._stores import open_store as open_store
    from ._stores import resolve_session as resolve_session
    from ._stores import scratch_store as scratch_store
    from ._view import TerminalView as TerminalView

__all__ = [
    "CONFIG_ENV",
    "DEMO",
    "HOST_SERVICES",
    "REPLAY_ENTRY_POINT_GROUP",
    "ByteProgress",
    "ConfigOption",
    "CwdOption",
    "Host",
    "ModelOption",
    "ProviderOption",
    "ReplayOption",
    "SessionOption",
    "StoreOption",
    "TerminalView",
    "bundled_deployment",
    "bundled_deployments",
    "bundled_recording",
    "check_store_path",
    "count_progress",
    "default_store_path",
    "existing_store_file",
    "deployment_path",
    "hosted",
    "open_host",
    "open_store",
    "replayed",
    "resolve_session",
    "scratch_store",
    "terminal_stderr",
]

_LAZY = {
    "DEMO": "._bundled",
    "bundled_deployment": "._bundled",
    "bundled_deployments": "._bundled",
    "bundled_recording": "._bundled",
    "CONFIG_ENV": "._lifecycle",
    "HOST_SERVICES": "._lifecycle",
    "REPLAY_ENTRY_POINT_GROUP": "._lifecycle",
    "Host": "._lifecycle",
    "deployment_path": "._lifecycle",
    "hosted": "._lifecycle",
    "open_host": "._lifecycle",
    "replayed": "._lifecycle",
    "ConfigOption": "._options",
    "CwdOption": "._options",
    "ModelOption": "._options",
    "ProviderOption": "._options",
    "ReplayOption": "._options",
    "SessionOption": "._options",
    "StoreOption": "._options",
    "ByteProgress": "._progress",
    "count_progress": "._progress",
    "terminal_stderr": "._progress",
    "check_store_path": "._stores",
    "default_store_path": "._stores",
    "existing_store_file": "._stores",
    "open_store": "._stores",
    "resolve_session": "._stores",
    "scratch_store": "._stores",
    "TerminalView": "._view",
}
"""Where each public name lives: importing one submodule (or using one name) imports no other."""

if not TYPE_CHECKING:  # a module __getattr__ would make type checkers accept any name
    from dsh.runtime.lazy import lazy_attributes

    __getattr__ = lazy_attributes(__name__, _LAZY, globals())
    del lazy_attributes


del TYPE_CHECKING  # not a public name
