"""`dsh web`: serve a session store's sessions to a browser on this machine (loopback by default), behind an access
token that the printed address carries; with a deployment (`--config`, or `--replay` a recording), pages can chat."""

from __future__ import annotations

import socket
import sys
from contextlib import ExitStack
from typing import Annotated

import anyio
import typer

from dsh.runtime.host import (
    ConfigOption,
    Host,
    ReplayOption,
    StoreOption,
    deployment_path,
    open_host,
    open_store,
)
from dsh.runtime.kernel import ConfigError, Context, resolve_plugin
from dsh.runtime.session import PRICES, PriceTable, SessionStoreProtocol

from ._security import is_loopback, new_token

__all__ = ["web_command"]

GRACE_S = 2
"""How long open pages (live streams) may take to close when the server stops."""

DEFAULT_PRICES_PLUGIN = "stats"
"""The plugin (by its entry-point name) whose default config holds the prices shown when the deployment has none."""


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise typer.BadParameter(
            f"cannot listen on {host}:{port}: {error.strerror}", param_hint="--host/--port"
        ) from None
    sock.listen(128)
    return sock


def _hosts(host: str, port: int) -> list[str]:
    if is_loopback(host):
        return [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
    shown = f"[{host}]" if ":" in host else host
    return [f"{shown}:{port}"]


async def _serve(
    sock: socket.socket, store: SessionStoreProtocol, host: Host | None, token: str, writable: bool
) -> None:
    import uvicorn

    from ._app import create_app
    from ._chat import Chat

    hosts = _hosts(sock.getsockname()[0], sock.getsockname()[1])
    async with anyio.create_task_group() as group:
        chat = None if host is None else Chat(host, group)
        app = create_app(store, token=token, hosts=hosts, chat=chat, writable=writable, prices=_prices(host))
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=GRACE_S, access_log=False
        )
        try:
            await uvicorn.Server(config).serve([sock])
        finally:
            if chat is not None:
                chat.close()  # the held sessions close (their turns cancelled, logged aborted) before the host goes


def _prices(host: Host | None) -> PriceTable:
    """The deployment's price table (its plugin that provides `PRICES`), else the `stats` plugin's defaults (DeepSeek's
    published prices) read through the same service, loaded alone; an empty table (costs unknown) without it."""
    if host is not None and host.ctx.has(PRICES):
        return host.ctx.get(PRICES)
    try:
        plugin = resolve_plugin(DEFAULT_PRICES_PLUGIN)
    except ConfigError:  # no `stats` entry point (a trimmed install)
        return PriceTable()
    ctx = Context()
    try:
        ctx.plugin(plugin, None)
        return ctx.get(PRICES)
    finally:
        ctx.dispose()


def web_command(
    store: StoreOption = None,
    config: ConfigOption = None,
    replay: ReplayOption = None,
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port (0 picks a free one).")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="DSH_WEB_TOKEN",
            show_envvar=False,
            help="The access token (also $DSH_WEB_TOKEN); a fresh one is made for a loopback address.",
        ),
    ] = None,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only", help="Show sessions only: no chat, even with a deployment, and no re-runs."
        ),
    ] = False,
) -> None:
    """Show the store's sessions in a browser: the list, each session's turns, tool calls and lineage, and live
    progress of a session another process is writing. With a deployment (--config or $DSH_CONFIG, or --replay LOG
    for its model served from a recording), pages can also start sessions, prompt, steer, cancel and fork.

    The first line printed is the address to open; it carries the access token, which the first visit turns into a
    cookie. A non-loopback --host needs --token (or $DSH_WEB_TOKEN), so nobody serves a store to the network by
    accident.

    Example: dsh web --store ~/.local/share/dsh/sessions.db --config examples/coding-agent.yml --port 0
    """
    if not is_loopback(host) and not token:
        raise typer.BadParameter(
            f"{host} is not a loopback address: serving the store beyond this machine needs --token (or "
            "$DSH_WEB_TOKEN) set to a secret of your own",
            param_hint="--host",
        )
    token = token or new_token()
    chatting = not read_only and (replay is not None or deployment_path(config, required=False) is not None)
    with ExitStack() as stack:
        hosted: Host | None = None
        if chatting:
            hosted = stack.enter_context(open_host(config, store, replay=replay))
            opened = hosted.store
        else:
            opened = stack.enter_context(open_store(store))
        sock = stack.enter_context(_bind(host, port))
        shown = f"[{host}]" if ":" in host else host
        print(f"http://{shown}:{sock.getsockname()[1]}/?token={token}", flush=True)
        mode = "chat" if chatting else "read-only"
        print(f"serving {opened.location} ({mode}; Ctrl-C stops)", file=sys.stderr, flush=True)
        anyio.run(_serve, sock, opened, hosted, token, not read_only)
