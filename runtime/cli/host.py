"""What the `dsh` command provides on the root context before it loads a deployment: the host-provided services.

A deployment lists plugins; where sessions live is the host's choice, not the deployment's, so the session store
(`runtime.session.STORE`) comes from the command. `dsh config check` counts these services as present, and every
command that loads a deployment provides them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from runtime.kernel import Context, ServiceKey
from runtime.session import STORE, SessionStore

__all__ = ["HOST_SERVICES", "scratch_host"]

HOST_SERVICES: tuple[ServiceKey[Any], ...] = (STORE,)
"""The services the `dsh` command provides on the root context (the session store)."""


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
