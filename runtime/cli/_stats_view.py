"""What `dsh sessions stats`, `sessions list --usage` and `sessions show` print of a session's figures, and where
the price table comes from: the deployment's (`--config` or `$DSH_CONFIG`: the plugin that provides `PRICES`,
loaded alone), else the `stats` plugin's own defaults (DeepSeek's published prices), else none (costs unknown)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table

from dsh.runtime.host import deployment_path
from dsh.runtime.kernel import ConfigError, Context, load_deployment, resolve_plugin
from dsh.runtime.session import PRICES, Figures, PriceTable, SessionStats, TurnStats, ordered_tools

__all__ = ["print_stats", "resolve_prices", "stats_json", "tokens_and_cost", "turn_line", "usage_cell"]

DEFAULT_PRICES_PLUGIN = "stats"
"""The plugin whose default config holds the prices used when no deployment is given."""


def resolve_prices(config: Path | None) -> PriceTable | None:
    """The price table: the deployment's plugin that provides `PRICES` (the last one listed), loaded alone with
    its config; with no deployment, the `stats` plugin's defaults; None when neither has one."""
    path = deployment_path(config, required=False)
    if path is not None:
        deployment = load_deployment(path)
        entries = [entry for entry in deployment.plugins if PRICES in entry.plugin.provides]
        if not entries:
            return None
        plugin, plugin_config = entries[-1].plugin, entries[-1].config
    else:
        try:
            plugin = resolve_plugin(DEFAULT_PRICES_PLUGIN)
        except ConfigError:  # no `stats` entry point (a trimmed install): costs are unknown, and say so
            return None
        plugin_config = None
    ctx = Context()
    try:
        ctx.plugin(plugin, plugin_config)
        return ctx.get(PRICES)
    finally:
        ctx.dispose()


def stats_json(stats: SessionStats) -> dict[str, Any]:
    """`--json`: every figure, the calls, turns and tools, and the children with their own."""
    data: dict[str, Any] = msgspec.to_builtins(stats)
    return data


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def _cost(value: float | None, currency: str | None) -> str:
    if value is None:
        return "-"
    symbol = "$" if currency in (None, "USD") else f"{currency} "
    return f"{symbol}{value:.6f}" if value < 0.01 else f"{symbol}{value:.4f}"


def tokens_and_cost(figures: Figures, currency: str | None) -> str:
    """`in 1,234 / out 56 (reasoning 7) / cache 8,000 · $0.0012`."""
    reasoning = f" (reasoning {figures.reasoning_tokens:,})" if figures.reasoning_tokens else ""
    text = (
        f"in {figures.input_tokens:,} / out {figures.output_tokens:,}{reasoning} / "
        f"cache {figures.cache_read_tokens:,}"
    )
    if figures.cache_write_tokens:
        text += f" (+{figures.cache_write_tokens:,} written)"
    return text + f" · {_cost(figures.cost, currency)}"


def usage_cell(figures: Figures, currency: str | None) -> str:
    """`sessions list --usage`'s cell: `in/out/cache · cost`."""
    tokens = f"{figures.input_tokens:,}/{figures.output_tokens:,}/{figures.cache_read_tokens:,}"
    return f"{tokens} · {_cost(figures.cost, currency)}"


def turn_line(turn: TurnStats, currency: str | None) -> str:
    """One turn's figures, as `sessions show` prints them under the turn's end."""
    retries = f" ({_n(turn.retries, 'retry')})" if turn.retries else ""
    return (
        f"{_n(turn.steps, 'step')}, {_n(turn.model_calls, 'model call')}{retries}, "
        f"{_n(turn.tool_calls, 'tool call')}; tokens {tokens_and_cost(turn, currency)}; "
        f"wall {_ms(turn.wall_ms or None)}, model {_ms(turn.model_ms)}, tools {_ms(turn.tool_ms)}"
    )


def _summary(console: Console, name: str, figures: Figures, currency: str | None) -> None:
    retries = f" ({_n(figures.retries, 'retry')})" if figures.retries else ""
    errors = f" ({_n(figures.tool_errors, 'error')})" if figures.tool_errors else ""
    console.print(
        f"[bold]{name}[/]: {_n(figures.turns, 'turn')}, {_n(figures.steps, 'step')}, "
        f"{_n(figures.model_calls, 'model call')}{retries}, {_n(figures.tool_calls, 'tool call')}{errors}",
        highlight=False,
    )
    console.print(f"  tokens {tokens_and_cost(figures, currency)}", highlight=False)
    console.print(
        f"  time: wall {_ms(figures.wall_ms)}, model {_ms(figures.model_ms)}, tools {_ms(figures.tool_ms)}",
        highlight=False,
    )


def print_stats(console: Console, stats: SessionStats) -> None:
    """The human form of `dsh sessions stats`: the session's figures, its tools, its model calls, then each child
    and the sums."""
    currency = stats.currency
    title = f'  "{stats.title}"' if stats.title else ""
    console.print(f"[bold]session {stats.session}[/]{title}", highlight=False)
    _summary(console, "this session", stats, currency)
    console.print(
        f"  first token: median {_ms(stats.ttft_ms_median)}, max {_ms(stats.ttft_ms_max)}", highlight=False
    )
    if stats.cost is None:
        console.print("  cost unknown: no price table (a deployment that loads `stats`, with --config)")
    elif stats.unpriced:
        console.print(
            f"  not priced (no entry in the price table): {', '.join(stats.unpriced)}", highlight=False
        )
    if stats.tools:
        table = Table(title="tools")
        for column in ("tool", "calls", "errors", "time"):
            table.add_column(column, justify="left" if column == "tool" else "right")
        for name, tool in ordered_tools(stats):
            table.add_row(name, str(tool.calls), str(tool.errors), _ms(tool.time_ms))
        console.print(table)
    if stats.calls:
        table = Table(title="model calls")
        columns = ("call", "kind", "model", "finish", "1st token", "time", "in", "out", "cache", "cost")
        for column in columns:
            table.add_column(column, justify="left" if column in ("kind", "model", "finish") else "right")
        for call in stats.calls:
            table.add_row(
                f"{call.turn}.{call.step}" + (f" #{call.attempt}" if call.attempt > 1 else ""),
                call.kind,
                call.model or "?",
                call.finish or "-",
                _ms(call.ttft_ms),
                _ms(call.duration_ms),
                f"{call.input_tokens:,}",
                f"{call.output_tokens:,}",
                f"{call.cache_read_tokens:,}",
                _cost(call.cost, currency),
            )
        console.print(table)
    if stats.children:
        table = Table(title="children (forks and subagents, with their own children)")
        for column in ("session", "how", "turns", "model calls", "tool calls", "in", "out", "cache", "cost"):
            table.add_column(column, justify="left" if column in ("session", "how") else "right")
        for child in stats.children:
            total = child.total
            how = child.how or "-"
            if child.spawned_by is not None:
                how += f", call {child.spawned_by.get('callId', '?')}"
            table.add_row(
                child.session,
                how,
                str(total.turns),
                str(total.model_calls),
                str(total.tool_calls),
                f"{total.input_tokens:,}",
                f"{total.output_tokens:,}",
                f"{total.cache_read_tokens:,}",
                _cost(total.cost, currency),
            )
        console.print(table)
        _summary(console, "children", stats.children_total, currency)
        _summary(console, "total", stats.total, currency)
