"""The host side of every command that loads a deployment: the services the `dsh` command provides on the root
context before loading it (the session store: where sessions live is the host's choice, not the deployment's), and
opening a deployment over them, for inspection (`scratch_host`) or to run agents (`open_host`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from runtime.agent import AgentOptions
from runtime.kernel import ConfigError, Context, Deployment, ServiceKey, load_deployment, load_deployment_into
from runtime.session import STORE, SessionStore

from .sessions_cmd import default_store_path

__all__ = ["CONFIG_ENV", "HOST_SERVICES", "Host", "deployment_path", "open_host", "scratch_host"]

CONFIG_ENV = "DSH_CONFIG"

HOST_SERVICES: tuple[ServiceKey[Any], ...] = (STORE,)
"""The services the `dsh` command provides on the root context (the session store); `dsh config check` counts them
as present."""


@dataclass(frozen=True)
class Host:
    """A loaded deployment: the root context (store provided, plugins loaded), the deployment and the store."""

    ctx: Context
    deployment: Deployment
    store: SessionStore

    def options(
        self, *, model: str | None = None, provider: str | None = None, cwd: Path | None = None
    ) -> AgentOptions:
        """Agent options: the flags first, then the deployment's `model:`/`provider:`."""
        return AgentOptions(
            provider=provider or self.deployment.provider,
            model=model or self.deployment.model,
            cwd=cwd,
        )


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


@contextmanager
def open_host(config: Path | None, store: Path | None) -> Iterator[Host]:
    """Open the store (default: the user's), load the deployment into a fresh root context, and undo both on exit."""
    deployment = load_deployment(deployment_path(config))
    with SessionStore(store or default_store_path()) as opened:
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
