"""The host lifecycle every front end shares (`dsh run`, `dsh chat`, `dsh prompt`, `dsh acp`, the replay driver):
provide the session store on a fresh root context, load the deployment into it, and undo all of it in reverse on
exit (`hosted`); and how the `dsh` command picks what to host (`open_host`: `--config` or `$DSH_CONFIG`, `--store`
or the user's store, and `--replay LOG` swapping the deployment's model for a recording)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from dsh.runtime.kernel import (
    ConfigError,
    Context,
    Deployment,
    ServiceKey,
    load_deployment,
    load_deployment_into,
)
from dsh.runtime.session import STORE, SessionStoreProtocol

from ._bundled import bundled_deployment, bundled_recording
from ._stores import open_store, resolve_session
from ._view import TerminalView

if TYPE_CHECKING:
    from dsh.runtime.agent import Agent, AgentOptions

__all__ = [
    "CONFIG_ENV",
    "HOST_SERVICES",
    "REPLAY_ENTRY_POINT_GROUP",
    "Host",
    "deployment_path",
    "hosted",
    "open_host",
    "replayed",
]

CONFIG_ENV = "DSH_CONFIG"
REPLAY_ENTRY_POINT_GROUP = "dsh.replay"

HOST_SERVICES: tuple[ServiceKey[Any], ...] = (STORE,)
"""The services a host provides on the root context (the session store); `dsh config check` counts them as
present."""


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
        from dsh.runtime.agent import AgentOptions  # the agent loop loads with the deployment, not before

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
        """`--session ID` resumed (in its own cwd unless `--cwd`; a unique prefix of an id is enough), or a new
        session in `--cwd` or the current directory; with `out`, every agent's events are shown there as they are
        appended (a failed turn and each retry on stderr). An unknown session id fails here, before anything is opened."""
        from dsh.runtime.agent import AGENTS, EVENT

        if out is not None:
            err = Console(stderr=True, soft_wrap=True) if out.file is sys.stdout else out
            self.ctx.on(EVENT, TerminalView(out, err=err).on_event)
        agents = self.ctx.get(AGENTS)
        options = self.options(model=model, provider=provider, cwd=cwd)
        if session is not None:
            return agents.resume(resolve_session(self.store, session), options)
        return agents.create(replace(options, cwd=cwd or Path.cwd()))


@contextmanager
def hosted(deployment: Deployment, store: SessionStoreProtocol) -> Iterator[Host]:
    """Host `deployment` over `store`: a fresh root context providing the store, every plugin loaded in order;
    on exit the plugins are unloaded in reverse and the context disposed. The store stays the caller's."""
    ctx = Context()
    ctx.provide(STORE, store)
    try:
        loaded = load_deployment_into(ctx, deployment)
        try:
            yield Host(ctx, deployment, store)
        finally:
            for plugin in reversed(loaded):
                plugin.unload()
    finally:
        ctx.dispose()


def deployment_path(config: Path | None, *, required: bool = True) -> Path | None:
    """`--config`, else `$DSH_CONFIG` (a file, or the name of a bundled example: `coding-agent`); neither is an
    error that says what to pass (or None when not `required`)."""
    if config is not None:
        return bundled_deployment(config)
    env = os.environ.get(CONFIG_ENV)
    if env:
        return bundled_deployment(Path(env))
    if not required:
        return None
    raise ConfigError(
        f"no deployment: pass --config FILE or set ${CONFIG_ENV} (--config coding-agent is a complete one, "
        "bundled), or try a recording with no key: --replay demo"
    )


def replayed(deployment: Deployment | None, log: Path, *, provider: str | None = None) -> Deployment:
    """`--replay LOG` (run, chat, acp): the deployment with its model route, whatever it is called (and the route
    `provider` names, `--provider`), served by a replay adapter from the recorded model calls of `log`, so the loop
    runs unchanged (the model is a transport); with no deployment, the one `dsh replay` re-runs recordings with.
    runtime/ imports nothing from replay/, so the swap arrives through the `dsh.replay` entry point: a function
    `(deployment | None, log, provider: str | None) -> Deployment`."""
    log = bundled_recording(log)
    if not log.exists():
        raise ConfigError(
            f"--replay {log}: no such file or directory; expected a JSONL log, a scenario directory, or `demo` "
            "(the bundled demo recording)"
        )
    from importlib.metadata import entry_points

    found = list(entry_points(group=REPLAY_ENTRY_POINT_GROUP))
    if not found:
        raise ConfigError(
            f"--replay {log}: no replay adapter is installed (nothing in the `{REPLAY_ENTRY_POINT_GROUP}` "
            "entry-point group); replay/ provides it"
        )
    if len(found) > 1:
        names = ", ".join(f"{entry.name} = {entry.value}" for entry in found)
        raise ConfigError(f"--replay {log}: more than one `{REPLAY_ENTRY_POINT_GROUP}` entry point: {names}")
    swapped: Deployment = found[0].load()(deployment, log, provider)
    return swapped


@contextmanager
def open_host(
    config: Path | None,
    store: str | Path | None,
    *,
    replay: Path | None = None,
    session: str | None = None,
    provider: str | None = None,
) -> Iterator[Host]:
    """Open the store (`store`, else the user's; one that must exist already when a `session` is to be resumed
    from it), host the deployment (`config`, else `$DSH_CONFIG`; with `replay`, its model served from that
    recording, and no deployment needed), and undo all of it on exit. `provider` (`--provider`) is the route the
    agents will call: with `replay`, the recording is served under it too."""
    path = deployment_path(config, required=replay is None)
    deployment = None if path is None else load_deployment(path)
    if replay is not None:
        deployment = replayed(deployment, replay, provider=provider)
    assert deployment is not None  # deployment_path raised when neither a deployment nor a replay is given
    with open_store(store, looking_for=session) as opened, hosted(deployment, opened) as host:
        yield host
