"""The wire-transport declaration: a live model transport plugin declares that its adapters speak a provider's wire
format (`OPENAI_CHAT`: chat-completions SSE) and how to build one pointed at another base URL. Replay finds the
transport of a deployment through this declaration (never by a module path): it swaps it for its replay adapter, or,
in wire replay, builds the real adapter pointed at a local server that serves the recording as that wire format."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from dsh.runtime.kernel import Plugin

from ._request import LlmAdapter

__all__ = ["OPENAI_CHAT", "WireTransport", "declare_wire_transport", "wire_transport"]

C = TypeVar("C", bound=msgspec.Struct)

OPENAI_CHAT = "openai-chat-completions"
"""OpenAI's chat-completions API: `POST {base}/chat/completions` with `stream: true`, answered by SSE `data:` chunks
and `[DONE]`, failures as an HTTP status with `{"error": {...}}` or an error object mid-stream."""


@dataclass(frozen=True, eq=False)
class WireTransport(Generic[C]):
    """`plugin` speaks `format`. `routes(config)`: the provider ids a config of it registers. `pointed_at(config,
    provider, base_url, api_key)`: a real adapter of route `provider` (for an id the config has no route for: its
    first route under that id), serving any model, sending to `base_url` with `api_key` as its credential.
    `key_env(config, provider)`: the environment variable route `provider` reads its key from (None: it needs
    none), which recording against the live model checks first."""

    plugin: Plugin[C]
    format: str
    routes: Callable[[C], tuple[str, ...]]
    pointed_at: Callable[[C, str, str, str], LlmAdapter]
    key_env: Callable[[C, str], str | None]


_DECLARED: dict[Plugin[Any], WireTransport[Any]] = {}


def declare_wire_transport(transport: WireTransport[C]) -> WireTransport[C]:
    """Declare `transport` (once, beside its plugin); returns it."""
    taken = _DECLARED.get(transport.plugin)
    if taken is not None and taken is not transport:
        raise ValueError(
            f'plugin "{transport.plugin.name}" already declares a wire transport ({taken.format})'
        )
    _DECLARED[transport.plugin] = transport
    return transport


def wire_transport(plugin: Plugin[Any]) -> WireTransport[Any] | None:
    """The wire transport `plugin` declares, or None when it is no live model transport."""
    return _DECLARED.get(plugin)
