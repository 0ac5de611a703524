"""Prompt goldens: what the model sees of a deployment of `dsh.runtime.prompt`, `dsh.runtime.tools` and `tool_web`, with
fetch only (the default) and with a search backend configured."""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion

from dsh.plugins.tool_web import FETCH_SECTION, SEARCH_SECTION, plugin

from ..tool_host import load_and_view, text

CONFIGS = {
    "fetch-only": None,
    "fetch-and-search": {"search": {"base_url": "http://127.0.0.1:9", "max_queries": 3}},
}


@pytest.mark.parametrize("case", list(CONFIGS))
def test_model_view(case: str, snapshot: SnapshotAssertion) -> None:
    system, tools = load_and_view(plugin, CONFIGS[case])
    assert text(FETCH_SECTION) in system
    assert (text(SEARCH_SECTION) in system) == (case == "fetch-and-search")
    assert system == snapshot(name="system")
    assert tools == snapshot(name="tools")
