"""`dsh prompt --config FILE`: load a deployment, assemble its prompt and print the rendered system prompt and the
tool schemas a model request would carry (or the render error)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import anyio
import msgspec
import typer

from runtime.agent import AGENTS
from runtime.kernel import Context, Deployment, load_deployment, load_deployment_into
from runtime.prompt import (
    SYSTEM_PROMPT,
    AssembleContext,
    PromptAssembly,
    render_context_snapshot,
    render_prompt,
)
from runtime.session import STORE, SessionStore

__all__ = ["assemble_deployment", "prompt"]


def assemble_deployment(deployment: Deployment, facts: Mapping[str, str]) -> PromptAssembly:
    """Load `deployment` into a fresh context and assemble its prompt for `facts` (`model`, `cwd`), as its agent
    loop would; everything loaded is undone before returning."""
    ctx = Context()
    # A deployment that loads the agent loop needs the session store the host provides; nothing is written to it.
    with (
        tempfile.TemporaryDirectory(prefix="dsh-prompt-") as scratch,
        SessionStore(Path(scratch) / "s.db") as store,
    ):
        ctx.provide(STORE, store)
        loaded = load_deployment_into(ctx, deployment)
        try:
            system_prompt = ctx.get(SYSTEM_PROMPT)
            if not ctx.has(AGENTS):
                # Without the agent loop nobody owns `model` and `cwd`: state them here as the loop does, as
                # projections of the facts.
                system_prompt.variable("model", lambda context: context.facts.get("model"))
                system_prompt.variable("cwd", lambda context: context.facts.get("cwd"))
            return anyio.run(system_prompt.assemble, AssembleContext(ctx=ctx, facts=dict(facts)))
        finally:
            for plugin in reversed(loaded):
                plugin.unload()
            ctx.dispose()


def _assemble(config: Path, *, model: str | None, cwd: str | None) -> PromptAssembly:
    deployment = load_deployment(config)
    facts = {key: value for key, value in (("model", model or deployment.model), ("cwd", cwd)) if value}
    return assemble_deployment(deployment, facts)


def prompt(
    config: Annotated[Path, typer.Option("--config", help="The deployment YAML file.")],
    model: Annotated[
        str | None, typer.Option(help="The model name for {{model}}; default: the deployment's `model:` key.")
    ] = None,
    cwd: Annotated[
        str | None,
        typer.Option(help="The session's working directory for {{cwd}}; default: none (no value)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print system, contexts, tools and variables as JSON.")
    ] = False,
) -> None:
    """Print the system prompt and tool schemas a deployment would send.

    A template error names the section and the registered variables, and exits with 2.

    Example: dsh prompt --config examples/acp-agent.yml --cwd /work/project
    """
    assembly = _assemble(config, model=model, cwd=cwd)
    system = render_prompt(assembly)
    contexts = render_context_snapshot(assembly)
    tools = msgspec.to_builtins(assembly.tools)
    if as_json:
        payload = {"system": system, "contexts": contexts, "tools": tools, "variables": assembly.variables}
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    typer.echo("# system prompt\n")
    typer.echo(system or "(empty: the request carries no system text)")
    if contexts:
        typer.echo("\n# runtime context snapshot\n")
        typer.echo(contexts)
    typer.echo(f"\n# tools ({len(tools)})\n")
    typer.echo(json.dumps(tools, indent=2, ensure_ascii=False) if tools else "(none)")
