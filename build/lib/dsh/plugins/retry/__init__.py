"""The retry policy on `agent/request-error`."""

from .plugin import plugin as plugin
from .policy import DEFAULT_CODES as DEFAULT_CODES
from .policy import RetryConfig as RetryConfig
from .policy import delay_ms as delay_ms
from .policy import policy_key as policy_key

__all__ = [
    "DEFAULT_CODES",
    "RetryConfig",
    "delay_ms",
    "plugin",
    "policy_key",
]
