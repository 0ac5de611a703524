"""The host side of every command that runs agents (`dsh run`, and later chat, acp, replay): open the session
store, provide it on a root context, load the deployment into it, and work out the agents' options."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from runtime.agent import AgentOptions
from runtime.kernel import ConfigError, Context, Deployment, load_deployment, load_deployment_into
from runtime.session import STORE, SessionStore

from .sessions_cmd import default_store_path

__all__ = ["CONFIG_ENV", "Host", "deployment_path", "open_host"]

CONFIG_ENV = "DSH_CONFIG"


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
