"""The retry policy on `agent/request-error`."""

from .clock import REAL_TIME as REAL_TIME
from .clock import RETRY_CLOCK as RETRY_CLOCK
from .clock import RealTime as RealTime
from .clock import RetryClock as RetryClock
from .plugin import plugin as plugin
from .policy import DEFAULT_CODES as DEFAULT_CODES
from .policy import RetryConfig as RetryConfig
from .policy import delay_ms as delay_ms
from .policy import policy_key as policy_key

__all__ = [
    "DEFAULT_CODES",
    "REAL_TIME",
    "RETRY_CLOCK",
    "RealTime",
    "RetryClock",
    "RetryConfig",
    "delay_ms",
    "plugin",
    "policy_key",
]
