"""The host side of every command that runs agents (`dsh run`, `dsh chat`, `dsh acp`): open the session store,
provide it on a root context, load the deployment into it, install the model transport (the live adapters the
deployment loads, or, later, a replay adapter) and work out the agents' options."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

from runtime.agent import AgentOptions
from runtime.kernel import ConfigError, Context, Deployment, load_deployment, load_deployment_into
from runtime.session import STORE, SessionStore

from .sessions_cmd import default_store_path

__all__ = ["CONFIG_ENV", "REPLAY_ENTRY_POINT_GROUP", "Host", "deployment_path", "install_replay", "open_host"]

CONFIG_ENV = "DSH_CONFIG"
REPLAY_ENTRY_POINT_GROUP = "dsh.replay"


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


def install_replay(ctx: Context, deployment: Deployment, log: Path) -> None:
    """THE seam for `--replay LOG` (run, chat and acp): register a replay adapter on `ctx` that serves the recorded
    model calls of `log` under the deployment's provider routes, so the loop runs unchanged (the model is a
    transport). runtime/ imports nothing from replay/, so the adapter arrives through the `dsh.replay` entry point:
    a function `(ctx, deployment, log) -> None`. No command passes `--replay` yet; the replay branch wires it."""
    found = list(entry_points(group=REPLAY_ENTRY_POINT_GROUP))
    if not found:
        raise ConfigError(
            f"--replay {log}: no replay adapter is installed (nothing in the `{REPLAY_ENTRY_POINT_GROUP}` "
            "entry-point group); replay/ provides it"
        )
    if len(found) > 1:
        names = ", ".join(f"{entry.name} = {entry.value}" for entry in found)
        raise ConfigError(f"--replay {log}: more than one `{REPLAY_ENTRY_POINT_GROUP}` entry point: {names}")
    found[0].load()(ctx, deployment, log)


@contextmanager
def open_host(config: Path | None, store: Path | None, *, replay: Path | None = None) -> Iterator[Host]:
    """Open the store (default: the user's), load the deployment into a fresh root context, register the replay
    adapter when `replay` names a log, and undo all of it on exit."""
    deployment = load_deployment(deployment_path(config))
    with SessionStore(store or default_store_path()) as opened:
        ctx = Context()
        ctx.provide(STORE, opened)
        loaded = load_deployment_into(ctx, deployment)
        try:
            if replay is not None:
                install_replay(ctx, deployment, replay)
            yield Host(ctx, deployment, opened)
        finally:
            for plugin in reversed(loaded):
                plugin.unload()
            ctx.dispose()
