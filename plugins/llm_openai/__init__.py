"""OpenAI-compatible chat-completions streaming: the adapter, its config and the `plugin` that registers its routes.
Each name loads on first use, so reading a route's config (the replay driver does) imports no HTTP client."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # the names for type checkers; at run time each is imported on first use
    from ._adapter import OpenAICompatibleAdapter as OpenAICompatibleAdapter
    from ._config import DEEPSEEK as DEEPSEEK
    from ._config import Config as Config
    from ._config import ProviderConfig as ProviderConfig
    from ._plugin import plugin as plugin
    from ._plugin import wire as wire

__all__ = ["DEEPSEEK", "Config", "OpenAICompatibleAdapter", "ProviderConfig", "plugin", "wire"]

_LAZY = {
    "OpenAICompatibleAdapter": "._adapter",
    "DEEPSEEK": "._config",
    "Config": "._config",
    "ProviderConfig": "._config",
    "plugin": "._plugin",
    "wire": "._plugin",
}

if not TYPE_CHECKING:  # a module __getattr__ would make type checkers accept any name
    from dsh.runtime.lazy import lazy_attributes

    __getattr__ = lazy_attributes(__name__, _LAZY, globals())
    del lazy_attributes


del TYPE_CHECKING  # not a public name
