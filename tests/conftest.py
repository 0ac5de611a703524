"""Shared pytest setup: Hypothesis profiles (`HYPOTHESIS_PROFILE=ci` runs more examples) and the anyio backend."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ("tests.pg_server",)  # the throwaway PostgreSQL server of the store conformance tests

settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
