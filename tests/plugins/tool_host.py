"""A host for tool plugins as a deployment loads them (`dsh.runtime.prompt`, then `dsh.runtime.tools`), and what the model
sees of it: the rendered system prompt and the tool schemas."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.prompt import SYSTEM_PROMPT, AssembleContext, PromptSection, render_prompt
from dsh.runtime.prompt import plugin as prompt_plugin
from dsh.runtime.tools import TOOLS
from dsh.runtime.tools import plugin as tools_plugin


def tool_host() -> Context:
    """A root context with the prompt service and the tool registry (its tool provider) loaded, in that order."""
    ctx = Context()
    ctx.plugin(prompt_plugin)
    ctx.plugin(tools_plugin)
    return ctx


def model_view(ctx: Context) -> tuple[str, list[dict[str, Any]]]:
    """The rendered system prompt and the tool schemas of the global layer, as a model request would carry them."""
    assembly = anyio.run(ctx.get(SYSTEM_PROMPT).assemble, AssembleContext(ctx=ctx))
    return render_prompt(assembly), msgspec.to_builtins(assembly.tools)


def registries(ctx: Context) -> tuple[object, object]:
    """Both registries a tool plugin writes to, as plain snapshots: to show an unload left nothing behind."""
    return ctx.get(TOOLS).snapshot(), ctx.get(SYSTEM_PROMPT).describe()


def load_and_view(plugin: Plugin[Any], config: object = None) -> tuple[str, list[dict[str, Any]]]:
    """What the model sees of a deployment of `dsh.runtime.prompt`, `dsh.runtime.tools` and `plugin` alone."""
    ctx = tool_host()
    ctx.plugin(plugin, config)
    return model_view(ctx)


def text(section: PromptSection) -> str:
    """A static section's text (tool sections are plain strings, not per-assembly providers)."""
    assert isinstance(section.text, str), f"section {section.name} has a text provider"
    return section.text
