"""The plugin's config: the routes (`providers`), each an OpenAI-compatible endpoint with its key's env variable.

The default is one route, DeepSeek (`https://api.deepseek.com`, key in `DEEPSEEK_API_KEY`), with the id the
original recorded its logs under (`deepseek-official`) and DeepSeek's context windows.
"""

from __future__ import annotations

import re

import msgspec

__all__ = ["DEEPSEEK", "Config", "ProviderConfig"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ProviderConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One route. `base_url` is the API root that `/chat/completions` is appended to (`http://localhost:8000/v1`
    for vLLM, `http://localhost:11434/v1` for Ollama, `http://localhost:8080/v1` for llama.cpp server).
    `api_key_env` names the environment variable holding the key (none: no `Authorization` header, for local
    servers). `models` lists the models served (empty: any). `context_window` is the window, in tokens, of every
    model of the route; `context_windows` gives a model its own (None and absent: unknown). Timeouts are in
    seconds; `idle_timeout` bounds each wait for bytes from the server."""

    id: str
    base_url: str
    api_key_env: str | None = None
    models: tuple[str, ...] = ()
    context_window: int | None = None
    context_windows: dict[str, int] = msgspec.field(default_factory=dict)
    idle_timeout: float = 300.0
    connect_timeout: float = 30.0
    headers: dict[str, str] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("a provider id must be non-empty")
        if not re.match(r"https?://[^/]", self.base_url):
            raise ValueError(
                f'base_url "{self.base_url}" must start with http:// or https:// and name a host'
            )
        if self.api_key_env is not None and not _ENV_NAME.fullmatch(self.api_key_env):
            raise ValueError(f'api_key_env "{self.api_key_env}" is not an environment variable name')
        if not (self.idle_timeout > 0 and self.connect_timeout > 0):
            raise ValueError("idle_timeout and connect_timeout must be positive (seconds)")
        if any(name.lower() == "authorization" for name in self.headers):
            raise ValueError("set the key through api_key_env, not an Authorization header in config")
        windows = {"context_window": self.context_window} | {
            f"context_windows.{model}": size for model, size in self.context_windows.items()
        }
        for key, size in windows.items():
            if size is not None and size < 1:
                raise ValueError(f"{key} must be a positive number of tokens, got {size}")
        if self.models:
            strays = sorted(set(self.context_windows) - set(self.models))
            if strays:
                raise ValueError(
                    f"context_windows names models the route does not serve: {', '.join(strays)}; "
                    f"models: {', '.join(self.models)}"
                )

    def window(self, model: str) -> int | None:
        """The context window of `model` on this route: its `context_windows` entry, else `context_window`
        (None: unknown)."""
        return self.context_windows.get(model, self.context_window)


DEEPSEEK = ProviderConfig(
    id="deepseek-official",
    base_url="https://api.deepseek.com",
    api_key_env="DEEPSEEK_API_KEY",
    models=("deepseek-v4-flash", "deepseek-chat", "deepseek-reasoner"),
    context_window=128_000,  # DeepSeek's API serves each of them with a 128K window (the original logged 128000)
)


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`providers`: the routes, each registered with `LlmRuntime` under its `id`."""

    providers: tuple[ProviderConfig, ...] = (DEEPSEEK,)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for route in self.providers:
            if route.id in seen:
                raise ValueError(f'provider id "{route.id}" is configured twice')
            seen.add(route.id)
