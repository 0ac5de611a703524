"""`dsh web`: serve a session store's sessions to a browser on this machine (loopback by default), behind an access
token that the printed address carries."""

from __future__ import annotations

import os
import socket
import sys
from typing import Annotated

import anyio
import typer

from dsh.runtime.host import StoreOption, open_store

from ._security import is_loopback, new_token

__all__ = ["web_command"]

GRACE_S = 2
"""How long open pages (live streams) may take to close when the server stops."""


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
    sock.set_inheritable(True)
    return sock


def _hosts(host: str, port: int) -> list[str]:
    if is_loopback(host):
        return [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
    shown = f"[{host}]" if ":" in host else host
    return [f"{shown}:{port}"]


def web_command(
    store: StoreOption = None,
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
) -> None:
    """Show the store's sessions in a browser: the list, each session's turns, tool calls and lineage, and live
    progress of a session another process is writing.

    The first line printed is the address to open; it carries the access token, which the first visit turns into a
    cookie. A non-loopback --host needs --token (or $DSH_WEB_TOKEN), so nobody serves a store to the network by
    accident.

    Example: dsh web --store ~/.local/share/dsh/sessions.db --port 0
    """
    import uvicorn

    from ._app import create_app

    if not is_loopback(host) and not token:
        raise typer.BadParameter(
            f"{host} is not a loopback address: serving the store beyond this machine needs --token (or "
            "$DSH_WEB_TOKEN) set to a secret of your own",
            param_hint="--host",
        )
    token = token or new_token()
    opened = open_store(store)
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"http://{shown}:{bound}/?token={token}", flush=True)
    print(f"serving {opened.location} (Ctrl-C stops)", file=sys.stderr, flush=True)
    app = create_app(opened, token=token, hosts=_hosts(host, bound))
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", timeout_graceful_shutdown=GRACE_S, access_log=False
    )
    server = uvicorn.Server(config)
    try:
        anyio.run(server.serve, [sock])
    finally:
        sock.close()
        opened.close()
        os.environ.pop("DSH_WEB_TOKEN", None)
