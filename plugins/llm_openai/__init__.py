"""OpenAI-compatible chat-completions streaming: the adapter, its config and the `plugin` that registers its routes."""

from ._adapter import OpenAICompatibleAdapter as OpenAICompatibleAdapter
from ._config import DEEPSEEK as DEEPSEEK
from ._config import Config as Config
from ._config import ProviderConfig as ProviderConfig
from ._plugin import plugin as plugin

__all__ = ["DEEPSEEK", "Config", "OpenAICompatibleAdapter", "ProviderConfig", "plugin"]
