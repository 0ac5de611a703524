"""The LiteLLM proxy, started once for the session on 127.0.0.1 (see litellm_proxy.py) and stopped after it. Not
installed, its tests skip, saying how to install it; under CI (CI=true, where scripts/check installed it) they fail."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.servers.litellm_proxy import MISSING, LiteLLMProxy, available


@pytest.fixture(scope="session")
def litellm_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteLLMProxy]:
    if not available():
        if os.environ.get("CI") == "true":
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    proxy = LiteLLMProxy(tmp_path_factory.mktemp("litellm"))
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
