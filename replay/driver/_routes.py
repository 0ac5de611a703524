"""The live route a scenario records against (its deployment's live transport, found by the wire transport it
declares), and whether the key that route needs is set: `dsh record` and `pytest --dsh-record` check it before they call a live model."""

from __future__ import annotations

import os

from dsh.runtime.llm import wire_transport

from ._scenario import Scenario, live_deployment

__all__ = ["missing_key"]


def missing_key(scenario: Scenario) -> str | None:
    """Why the scenario cannot be recorded against its live model here (its route's key is not set, or its
    deployment has no such route), or None when it can."""
    deployment = live_deployment(scenario)
    routes = [
        (route, transport.key_env(entry.config, route))
        for entry in deployment.plugins
        if (transport := wire_transport(entry.plugin)) is not None
        for route in transport.routes(entry.config)
    ]
    wanted = scenario.doc.provider or deployment.provider
    chosen = next(((route, env) for route, env in routes if wanted is None or route == wanted), None)
    if chosen is None:
        named = f"route {wanted}" if wanted else "route"
        return f"the deployment {deployment.path} has no live {named} to record against"
    route, env = chosen
    if env is not None and not os.environ.get(env):
        return f"route {route} needs its key in {env}, which is not set"
    return None
