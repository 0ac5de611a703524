"""Fixtures for the prompt tests: a context with `dsh.runtime.prompt` loaded, and its service."""

from __future__ import annotations

import pytest

from dsh.runtime.kernel import Context
from dsh.runtime.prompt import SYSTEM_PROMPT, SystemPrompt, plugin


@pytest.fixture
def ctx() -> Context:
    context = Context()
    context.plugin(plugin, {"persona": "You are a test agent."})
    return context


@pytest.fixture
def sp(ctx: Context) -> SystemPrompt:
    return ctx.get(SYSTEM_PROMPT)
