"""The host side of every command that runs agents (`dsh run`, `dsh chat`, `dsh acp`): open the session store,
provide it on a root context, load the deployment into it, install the model transport (the live adapters the
deployment loads, or a replay adapter with `--replay`) and work out the agents' options."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass, replace
from importlib.metadata import entry_points
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from rich.console import Console

from runtime.agent import AGENTS, EVENT, Agent, AgentOptions
from runtime.kernel import ConfigError, Context, Deployment, ServiceKey, load_deployment, load_deployment_into
from runtime.session import STORE, SessionStore, SessionStoreProtocol, open_store

from .sessions_cmd import default_store_path
from .view import TerminalView

__all__ = [
    "CONFIG_ENV",
    "HOST_SERVICES",
    "REPLAY_ENTRY_POINT_GROUP",
    "Host",
    "deployment_path",
    "replayed",
    "open_host",
    "scratch_host",
]

CONFIG_ENV = "DSH_CONFIG"
REPLAY_ENTRY_POINT_GROUP = "dsh.replay"

HOST_SERVICES: tuple[ServiceKey[Any], ...] = (STORE,)
"""The services the `dsh` command provides on the root context (the session store); `dsh config check` counts them
as present."""


@dataclass(frozen=True)
class Host:
    """A loaded deployment: the root context (store provided, plugins loaded), the deployment and the store."""

    ctx: Context
    deployment: Deployment
    store: SessionStoreProtocol

    def options(
        self, *, model: str | None = None, provider: str | None = None, cwd: Path | None = None
    ) -> AgentOptions:
        """Agent options: the flags first, then the deployment's `model:`/`provider:`."""
        return AgentOptions(
            provider=provider or self.deployment.provider,
            model=model or self.deployment.model,
            cwd=cwd,
        )

    def open_agent(
        self,
        session: str | None,
        *,
        model: str | None = None,
        provider: str | None = None,
        cwd: Path | None = None,
        out: Console | None = None,
    ) -> AbstractAsyncContextManager[Agent]:
        """`--session ID` resumed (in its own cwd unless `--cwd`), or a new session in `--cwd` or the current
        directory; with `out`, every agent's events are shown there as they are appended. An unknown session id
        fails here, before anything is opened."""
        if out is not None:
            self.ctx.on(EVENT, TerminalView(out).on_event)
        agents = self.ctx.get(AGENTS)
        options = self.options(model=model, provider=provider, cwd=cwd)
        if session is not None:
            self.store.info(session)
            return agents.resume(session, options)
        return agents.create(replace(options, cwd=cwd or Path.cwd()))


def deployment_path(config: Path | None) -> Path:
    """`--config`, else `$DSH_CONFIG`; neither is an error that says what to pass."""
    if config is not None:
        return config
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env)
    raise ConfigError(
        f"no deployment: pass --config FILE or set ${CONFIG_ENV} (examples/coding-agent.yml is a complete one)"
    )


def replayed(deployment: Deployment, log: Path) -> Deployment:
    """`--replay LOG` (run, chat, acp): the deployment with its live model transport swapped for a replay adapter
    serving the recorded model calls of `log`, so the loop runs unchanged (the model is a transport). runtime/
    imports nothing from replay/, so the swap arrives through the `dsh.replay` entry point: a function
    `(deployment, log) -> Deployment`."""
    found = list(entry_points(group=REPLAY_ENTRY_POINT_GROUP))
    if not found:
        raise ConfigError(
            f"--replay {log}: no replay adapter is installed (nothing in the `{REPLAY_ENTRY_POINT_GROUP}` "
            "entry-point group); replay/ provides it"
        )
    if len(found) > 1:
        names = ", ".join(f"{entry.name} = {entry.value}" for entry in found)
        raise ConfigError(f"--replay {log}: more than one `{REPLAY_ENTRY_POINT_GROUP}` entry point: {names}")
    swapped: Deployment = found[0].load()(deployment, log)
    return swapped


@contextmanager
def open_host(config: Path | None, store: str | Path | None, *, replay: Path | None = None) -> Iterator[Host]:
    """Open the store (default: the user's), load the deployment into a fresh root context (its model served from
    the recorded log `replay` when given), and undo all of it on exit."""
    deployment = load_deployment(deployment_path(config))
    if replay is not None:
        deployment = replayed(deployment, replay)
    with open_store(store or default_store_path()) as opened:
        ctx = Context()
        ctx.provide(STORE, opened)
        loaded = load_deployment_into(ctx, deployment)
        try:
            yield Host(ctx, deployment, opened)
        finally:
            for plugin in reversed(loaded):
                plugin.unload()
            ctx.dispose()


@contextmanager
def scratch_host() -> Iterator[Context]:
    """A root context providing every host service over throwaway state (a session store in a temporary
    directory, removed on exit): for commands that load a deployment to inspect it, never to run sessions."""
    with (
        TemporaryDirectory(prefix="dsh-") as directory,
        SessionStore(Path(directory) / "sessions.db") as store,
    ):
        ctx = Context()
        ctx.provide(STORE, store)
        try:
            yield ctx
        finally:
            ctx.dispose()
