"""`dsh run` as a subprocess over a loopback OpenAI-compatible server, with the bash tool configured as a test
needs: the deployment, the environment and the command line shared by the tests that attack bash end to end."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.runtime.cli.helpers import DSH


def deployment(base_url: str, *, key_env: str, bash: dict[str, Any] | None = None) -> str:
    """A deployment loading the tool registry before the model routes (as the examples do), so the route's key is
    declared secret; the `local` route is `base_url`, model `m`; the job service before bash (for a `bash` config
    that enables `run_in_background`)."""
    route = {"id": "local", "base_url": base_url, "api_key_env": key_env}
    return json.dumps(
        {
            "model": "m",
            "provider": "local",
            "plugins": [
                {"id": "prompt", "use": "dsh.runtime.prompt", "config": {"persona": "You are a test agent."}},
                {"id": "tools", "use": "dsh.runtime.tools"},
                {"id": "llm", "use": "dsh.runtime.llm"},
                {"id": "openai", "use": "dsh.plugins.llm_openai", "config": {"providers": [route]}},
                {"id": "jobs", "use": "dsh.runtime.jobs"},
                {"id": "bash", "use": "dsh.plugins.tool_bash", "config": bash or {}},
                {"id": "agent", "use": "dsh.runtime.agent"},
            ],
        }
    )


def run_command(config: Path, store: Path, cwd: Path, prompt: str = "go") -> list[str]:
    return [*DSH, "run", prompt, "--config", str(config), "--store", str(store), "--cwd", str(cwd)]


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}
