"""`dsh prompt --config FILE`: load a deployment, assemble its prompt and print the rendered system prompt and the
tool schemas a model request would carry (or the render error).

The deployment is loaded as the `dsh` command loads it (over the host services, here a throwaway session store),
so the `model` and `cwd` variables are the agent plugin's (`dsh.runtime.agent`), fed the same facts the loop states for
an agent: `--model` (default: the deployment's `model:` key) and `--cwd`."""

from __future__ import annotations

import json
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Annotated

import anyio
import msgspec
import typer

from dsh.runtime.agent import STEP_PREVIEW, StepPreview
from dsh.runtime.host import deployment_path, hosted, scratch_store
from dsh.runtime.kernel import load_deployment
from dsh.runtime.llm import TextBlock, UserMessage
from dsh.runtime.prompt import (
    SYSTEM_PROMPT,
    AssembleContext,
    PromptAssembly,
    PromptRenderError,
    render_context_snapshot,
    render_prompt,
)

__all__ = ["message_source", "message_text", "prompt"]

# The variables the agent plugin registers: the loop owns these facts (spec/prompt-and-subagents.md §1.11).
_AGENT_VARIABLES = ("model", "cwd")


def _assemble(
    config: Path, *, model: str | None, cwd: str | None
) -> tuple[PromptAssembly, tuple[UserMessage, ...]]:
    """The deployment's assembly, and the messages its plugins would add to a new session's first step (workspace
    instructions, with `--cwd`)."""
    deployment = load_deployment(config)
    with (
        TemporaryDirectory(prefix="dsh-") as directory,
        scratch_store(Path(directory)) as store,
        hosted(deployment, store) as host,
    ):
        # The facts `assemble_context_for(agent)` would state for an agent of this deployment.
        facts = {key: value for key, value in (("model", model or deployment.model), ("cwd", cwd)) if value}

        where = Path(cwd).resolve() if cwd else None

        async def both() -> tuple[PromptAssembly, tuple[UserMessage, ...]]:
            assembly = await host.ctx.get(SYSTEM_PROMPT).assemble(AssembleContext(ctx=host.ctx, facts=facts))
            added = await host.ctx.waterfall(STEP_PREVIEW, (), StepPreview(where))
            return assembly, added

        return anyio.run(both)


def message_text(message: UserMessage) -> str:
    """A user message's text blocks, as the model reads them."""
    return "\n".join(block.text for block in message.content if isinstance(block, TextBlock))


def message_source(message: UserMessage) -> str:
    """A user message's source kind as the log writes it (`agent-instructions`, `plugin`, ...)."""
    return str(type(message.source).__struct_config__.tag)


def _render(assembly: PromptAssembly) -> str:
    """`render_prompt`, with a hint when a template names an agent variable: the deployment never registered it (no
    agent plugin), or this command had no value to state for it (no `--model`/`model:`, no `--cwd`)."""
    try:
        return render_prompt(assembly)
    except PromptRenderError as error:
        name = error.variable
        if name not in _AGENT_VARIABLES:
            raise
        if name not in assembly.variables:
            hint = (
                f"{{{{{name}}}}} is registered by the agent plugin: add `{{id: agent, use: agent}}` to "
                "the deployment"
            )
        elif name == "model":
            hint = "dsh prompt states it from --model, or the deployment's `model:` key"
        else:
            hint = "dsh prompt states it from --cwd"
        raise PromptRenderError(f"{error}. {hint}", section=error.section, variable=name) from error


def prompt(
    config: Annotated[
        Path | None, typer.Option("--config", help="The deployment YAML file \\[default: $DSH_CONFIG].")
    ] = None,
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

    A template error (an unknown or valueless variable) names the section and exits with 2.

    Example: dsh prompt --config coding-agent --cwd .
    """
    path = deployment_path(config)
    assert path is not None  # required: deployment_path raised
    assembly, added = _assemble(path, model=model, cwd=cwd)
    system = _render(assembly)
    contexts = render_context_snapshot(assembly)
    tools = msgspec.to_builtins(assembly.tools)
    if as_json:
        payload = {
            "system": system,
            "contexts": contexts,
            "messages": msgspec.to_builtins(added),
            "tools": tools,
            "variables": assembly.variables,
        }
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    typer.echo("# system prompt\n")
    typer.echo(system or "(empty: the request carries no system text)")
    if contexts:
        typer.echo("\n# runtime context snapshot\n")
        typer.echo(contexts)
    for message in added:
        typer.echo(f"\n# user message ({message_source(message)})\n")
        typer.echo(message_text(message))
    typer.echo(f"\n# tools ({len(tools)})\n")
    typer.echo(json.dumps(tools, indent=2, ensure_ascii=False) if tools else "(none)")
