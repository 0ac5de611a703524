"""The retry policy: which failures are retried, how many times, and how long to wait before each attempt
(exponential back-off with jitter, `Retry-After` honoured up to the cap)."""

from __future__ import annotations

import hashlib
import json

import msgspec

from dsh.runtime.llm import FailureCode, LlmFailure

__all__ = ["DEFAULT_CODES", "RetryConfig", "delay_ms", "policy_key"]

DEFAULT_CODES = (
    FailureCode.EMPTY_RESPONSE,
    FailureCode.RATE_LIMIT,
    FailureCode.SERVER,
    FailureCode.TIMEOUT,
    FailureCode.TRANSPORT,
)


class RetryConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Config of `dsh.plugins.retry`.

    - `max_retries`: retries of one step after its first attempt (so at most `max_retries + 1` calls).
    - `codes`: the failure codes worth another attempt; anything else ends the turn at once.
    - `base_delay_ms`, `max_delay_ms`: the wait before retry n is `base * 2**(n-1)`, capped, then jittered.
    - `jitter`: the fraction of the wait drawn at random (0: none, 1: anywhere from 0 to the full wait).
    """

    max_retries: int = 5
    codes: tuple[str, ...] = DEFAULT_CODES
    base_delay_ms: int = 500
    max_delay_ms: int = 10_000
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if not 0 <= self.base_delay_ms <= self.max_delay_ms:
            raise ValueError(
                f"need 0 <= base_delay_ms <= max_delay_ms, got {self.base_delay_ms} and {self.max_delay_ms}"
            )
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"jitter must be within [0, 1], got {self.jitter}")


def _unit(key: str) -> float:
    """A number in [0, 1) drawn from `key`: the jitter is spread across sessions and steps, yet the same call
    waits the same time on every run, so a replayed log says what the recorded one said."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def delay_ms(config: RetryConfig, retry: int, failure: LlmFailure, key: str) -> int:
    """The wait before retry number `retry` (1-based). A provider's `Retry-After` wins over the back-off when it is
    longer, but never past `max_delay_ms`."""
    capped: int = min(config.max_delay_ms, config.base_delay_ms << max(0, retry - 1))
    backoff: int = round(capped * (1 - config.jitter * _unit(key)))
    if failure.provider_retry_after_ms is not None:
        backoff = max(backoff, min(failure.provider_retry_after_ms, config.max_delay_ms))
    return backoff


def policy_key(config: RetryConfig) -> str:
    """The policy as one JSON string, logged with every retry so a reader can tell which policy decided it."""
    return json.dumps(
        [
            "normal",
            config.max_retries,
            sorted(config.codes),
            config.base_delay_ms,
            config.max_delay_ms,
            config.jitter,
        ],
        separators=(",", ":"),
    )
