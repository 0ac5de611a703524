"""The live route a scenario records against (its deployment's OpenAI-compatible transport), and whether the key
that route needs is set: `dsh record` and `pytest --dsh-record` check it before they call a live model."""

from __future__ import annotations

import os

from dsh.plugins.llm_openai import Config as LiveConfig

from ._scenario import Scenario, is_live_transport, live_deployment

__all__ = ["missing_key"]


def missing_key(scenario: Scenario) -> str | None:
    """Why the scenario cannot be recorded against its live model here (its route's key is not set, or its
    deployment has no such route), or None when it can."""
    deployment = live_deployment(scenario)
    routes = [
        route
        for entry in deployment.plugins
        if is_live_transport(entry) and isinstance(entry.config, LiveConfig)
        for route in entry.config.providers
    ]
    wanted = scenario.doc.provider or deployment.provider
    chosen = next((route for route in routes if wanted is None or route.id == wanted), None)
    if chosen is None:
        named = f"route {wanted}" if wanted else "route"
        return f"the deployment {deployment.path} has no live {named} to record against"
    if chosen.api_key_env is not None and not os.environ.get(chosen.api_key_env):
        return f"route {chosen.id} needs its key in {chosen.api_key_env}, which is not set"
    return None
