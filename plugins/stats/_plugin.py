"""The `stats` plugin: provides `PRICES`, the price table of its config (DeepSeek's published prices unless the
deployment sets its own), so a session's cost is stated in the deployment's terms."""

from __future__ import annotations

import msgspec

from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.session import PRICES, Price, PriceTable

__all__ = ["DEEPSEEK_PRICES", "StatsConfig", "plugin"]

DEEPSEEK_PRICES = (
    Price(
        provider="deepseek-official", model="deepseek-v4-flash", input=0.14, cache_read=0.0028, output=0.28
    ),
    Price(
        provider="deepseek-official", model="deepseek-v4-pro", input=0.435, cache_read=0.003625, output=0.87
    ),
)
"""DeepSeek's published list prices in USD per million tokens (api-docs.deepseek.com, "Models & Pricing"):
`input` is a cache miss, `cache_read` a cache hit. Peak and off-peak rates are not modelled: these are the
standard ones."""


class StatsConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`currency` and `prices` (each `{provider, model, input, output, cache_read?, cache_write?}` per million
    tokens; `"*"` matches any provider or model). Setting `prices` replaces the defaults whole."""

    currency: str = "USD"
    prices: tuple[Price, ...] = DEEPSEEK_PRICES


def _apply(ctx: Context, config: StatsConfig) -> None:
    ctx.provide(PRICES, PriceTable(currency=config.currency, prices=config.prices))


plugin = Plugin(
    name="stats",
    apply=_apply,
    config=StatsConfig,
    provides=(PRICES,),
    description="the price table `dsh sessions stats` states costs with (DeepSeek's published prices by default)",
)
