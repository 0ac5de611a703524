"""Shared by the tests that run `dsh` as a subprocess: the command line, and a deployment over a loopback
OpenAI-compatible server with the bash tool and the agent loop."""

from __future__ import annotations

import json
import os
import sys

from tests.plugins.llm_openai.helpers import call, wire
from tests.plugins.llm_openai.loopback import Reply, data, sse

DSH = [sys.executable, "-c", "from dsh.runtime.cli import main; main()"]


def deployment(
    base_url: str,
    *,
    key_env: str | None = None,
    persona: str = "You are a test agent on {{model}}.",
    extra: tuple[dict[str, object], ...] = (),
    retry: dict[str, object] | None = None,
) -> str:
    """A deployment (JSON is YAML) whose `local` route is `base_url`; model `m`; with `retry`, the retry plugin
    configured so; `extra` plugins after the rest."""
    route: dict[str, object] = {"id": "local", "base_url": base_url}
    if key_env:
        route["api_key_env"] = key_env
    return json.dumps(
        {
            "model": "m",
            "provider": "local",
            "plugins": [
                {"id": "prompt", "use": "dsh.runtime.prompt", "config": {"persona": persona}},
                {"id": "llm", "use": "dsh.runtime.llm"},
                {"id": "openai", "use": "dsh.plugins.llm_openai", "config": {"providers": [route]}},
                {"id": "tools", "use": "dsh.runtime.tools"},
                {"id": "bash", "use": "dsh.plugins.tool_bash"},
                {"id": "agent", "use": "dsh.runtime.agent"},
                *([{"id": "retry", "use": "retry", "config": retry}] if retry is not None else []),
                *extra,
            ],
        }
    )


def plain_env(**extra: str) -> dict[str, str]:
    """The environment for a `dsh` subprocess whose output a test reads: no colours, no terminal styling, a fixed
    width, and nothing from the caller's environment that would change rich's or typer's rendering."""
    keep = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "SYSTEMROOT") if key in os.environ}
    return {
        **keep,
        "TERM": "dumb",
        "NO_COLOR": "1",
        "COLUMNS": "100",
        "TERMINAL_WIDTH": "100",
        "_TYPER_FORCE_DISABLE_TERMINAL": "1",
        "PYTHONIOENCODING": "utf-8",
        **extra,
    }


def bash_call(command: str, *, call_id: str = "call_1") -> Reply:
    """A model reply asking for one bash call."""
    return tool_call("bash", {"command": command, "description": "run it"}, call_id=call_id)


def tool_call(name: str, arguments_object: dict[str, object], *, call_id: str = "call_1") -> Reply:
    """A model reply asking for one call of `name`."""
    arguments = json.dumps(arguments_object)
    return Reply(
        parts=[
            sse(
                wire(tool_calls=[call(0, "", id=call_id, name=name)]),
                wire(tool_calls=[call(0, arguments)]),
                wire(finish="tool_calls"),
            )
        ]
    )


def answer(text: str, *, reasoning: str | None = None) -> Reply:
    """A model reply streaming `reasoning` (when given) and then `text` in two deltas."""
    half = len(text) // 2
    chunks = [wire(reasoning=reasoning)] if reasoning is not None else []
    chunks += [wire(content=text[:half]), wire(content=text[half:]), wire(finish="stop")]
    return Reply(parts=[sse(*chunks)])


def partial_then_hang(text: str) -> Reply:
    """A model reply that streams `text` and then sends nothing more until the client hangs up."""
    return Reply(parts=[data(wire(content=text))], end="hang")
