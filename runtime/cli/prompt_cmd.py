"""`dsh prompt --config FILE`: load a deployment, assemble its prompt and print the rendered system prompt and the
tool schemas a model request would carry (or the render error)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import anyio
import msgspec
import typer

from runtime.kernel import Context, load_deployment, load_deployment_into
from runtime.prompt import (
    SYSTEM_PROMPT,
    AssembleContext,
    PromptAssembly,
    render_context_snapshot,
    render_prompt,
)

__all__ = ["prompt"]


def _assemble(config: Path, *, model: str | None, cwd: str | None) -> PromptAssembly:
    deployment = load_deployment(config)
    ctx = Context()
    loaded = load_deployment_into(ctx, deployment)
    try:
        system_prompt = ctx.get(SYSTEM_PROMPT)
        # Stand-in until the agent loop (runtime.agent) exists: the loop owns the `model` and `cwd` variables,
        # as pure projections of the agent it assembles for. This command states the same facts from its options.
        system_prompt.variable("model", lambda context: context.facts.get("model"))
        system_prompt.variable("cwd", lambda context: context.facts.get("cwd"))
        facts = {key: value for key, value in (("model", model or deployment.model), ("cwd", cwd)) if value}
        return anyio.run(system_prompt.assemble, AssembleContext(ctx=ctx, facts=facts))
    finally:
        for plugin in reversed(loaded):
            plugin.unload()
        ctx.dispose()


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
