"""The kernel's public names: the plugin host, plugin declarations, service keys, events, effects and errors."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # the names for type checkers; at run time each is imported on first use
    from .config import PLUGIN_GROUP as PLUGIN_GROUP
    from .config import YAML_MAX_DEPTH as YAML_MAX_DEPTH
    from .config import YAML_MAX_NODES as YAML_MAX_NODES
    from .config import Deployment as Deployment
    from .config import PluginEntry as PluginEntry
    from .config import YamlLimitError as YamlLimitError
    from .config import check_needs as check_needs
    from .config import decode_plugin_config as decode_plugin_config
    from .config import load_deployment as load_deployment
    from .config import load_yaml as load_yaml
    from .config import plugin_names as plugin_names
    from .config import plugin_target as plugin_target
    from .config import resolve_plugin as resolve_plugin
    from .context import Context as Context
    from .context import ListenerFailure as ListenerFailure
    from .context import LoadedPlugin as LoadedPlugin
    from .context import Scope as Scope
    from .context import load_deployment_into as load_deployment_into
    from .effects import Disposer as Disposer
    from .effects import EffectStack as EffectStack
    from .errors import ConfigError as ConfigError
    from .errors import ConfigErrors as ConfigErrors
    from .errors import DshError as DshError
    from .errors import DuplicatePluginError as DuplicatePluginError
    from .errors import KernelError as KernelError
    from .errors import ListenerError as ListenerError
    from .errors import MissingServiceError as MissingServiceError
    from .errors import PluginLoadError as PluginLoadError
    from .errors import ServiceConflictError as ServiceConflictError
    from .errors import ServiceNotFoundError as ServiceNotFoundError
    from .events import Emit as Emit
    from .events import Event as Event
    from .events import Next as Next
    from .events import Waterfall as Waterfall
    from .plugin import NoConfig as NoConfig
    from .plugin import Plugin as Plugin
    from .plugin import declared_providers as declared_providers
    from .services import Bindable as Bindable
    from .services import ServiceKey as ServiceKey

__all__ = [
    "Bindable",
    "ConfigError",
    "ConfigErrors",
    "Context",
    "Deployment",
    "Disposer",
    "DshError",
    "DuplicatePluginError",
    "EffectStack",
    "Emit",
    "Event",
    "KernelError",
    "ListenerError",
    "ListenerFailure",
    "LoadedPlugin",
    "MissingServiceError",
    "Next",
    "NoConfig",
    "Plugin",
    "PluginEntry",
    "PluginLoadError",
    "Scope",
    "ServiceConflictError",
    "ServiceKey",
    "ServiceNotFoundError",
    "Waterfall",
    "YAML_MAX_DEPTH",
    "YAML_MAX_NODES",
    "YamlLimitError",
    "check_needs",
    "declared_providers",
    "decode_plugin_config",
    "load_deployment",
    "load_deployment_into",
    "load_yaml",
    "PLUGIN_GROUP",
    "plugin_names",
    "plugin_target",
    "resolve_plugin",
]

_LAZY = {
    "YAML_MAX_DEPTH": ".config",
    "YAML_MAX_NODES": ".config",
    "Deployment": ".config",
    "PluginEntry": ".config",
    "YamlLimitError": ".config",
    "check_needs": ".config",
    "decode_plugin_config": ".config",
    "load_deployment": ".config",
    "load_yaml": ".config",
    "PLUGIN_GROUP": ".config",
    "plugin_names": ".config",
    "plugin_target": ".config",
    "resolve_plugin": ".config",
    "Context": ".context",
    "ListenerFailure": ".context",
    "LoadedPlugin": ".context",
    "Scope": ".context",
    "load_deployment_into": ".context",
    "Disposer": ".effects",
    "EffectStack": ".effects",
    "ConfigError": ".errors",
    "ConfigErrors": ".errors",
    "DshError": ".errors",
    "DuplicatePluginError": ".errors",
    "KernelError": ".errors",
    "ListenerError": ".errors",
    "MissingServiceError": ".errors",
    "PluginLoadError": ".errors",
    "ServiceConflictError": ".errors",
    "ServiceNotFoundError": ".errors",
    "Emit": ".events",
    "Event": ".events",
    "Next": ".events",
    "Waterfall": ".events",
    "NoConfig": ".plugin",
    "Plugin": ".plugin",
    "declared_providers": ".plugin",
    "Bindable": ".services",
    "ServiceKey": ".services",
}
"""Where each public name lives: importing one submodule (or using one name) imports no other."""

if not TYPE_CHECKING:  # a module __getattr__ would make type checkers accept any name
    from dsh.runtime.lazy import lazy_attributes

    __getattr__ = lazy_attributes(__name__, _LAZY, globals())
    del lazy_attributes


del TYPE_CHECKING  # not a public name
