"""The subagent tool bound to one provider: the tool itself (delegate, wait, return the child's answer or an
error result), its config, and the plugin that mounts it while the provider is registered, follows the provider's
lifecycle events, and re-words it from whichever provider object arrives."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, Literal

import anyio
import msgspec

from dsh.plugins.subagent import (
    PROVIDER_ADDED,
    PROVIDER_REMOVED,
    SUBAGENTS,
    SubagentError,
    SubagentProvider,
    SubagentRequest,
    SubagentResult,
    SubagentView,
)
from dsh.runtime.jobs import Job, JobEnd, JobIO, JobService, background_jobs
from dsh.runtime.kernel import ConfigError, Context, Plugin
from dsh.runtime.prompt import SYSTEM_PROMPT, PromptSection
from dsh.runtime.session import SpawnedBy
from dsh.runtime.tools import TOOLS, Tool, ToolContext, ToolResult
from dsh.runtime.tools.definition import TOOL_NAME

from ._continuable import Children, send_message_tool, start_continuable
from ._wording import parameters, wording

__all__ = [
    "CONTINUABLE_ORDER",
    "ToolSubagentConfig",
    "continuable_section",
    "default_tool_name",
    "plugin",
    "render_result",
    "subagent_tool",
]

CONTINUABLE_ORDER = 116.5
"""Where a continuable tool's section `tool:<tool name>` goes (the original's order)."""


def continuable_section(name: str) -> str:
    """The habits of a continuable subagent tool `name` (its section's text while the tool exists)."""
    return (
        f"Use {name} in the background by default. Start independent delegations together, in one assistant "
        "message, and keep doing useful work while they run. Set `run_in_background: false` only when your next "
        "action depends on that subagent's result. When a background run settles, a notice with its outcome and "
        "its closing message arrives as your next input."
    )


log = logging.getLogger("dsh.tool_subagent")

_HEADLINES = {
    "aborted": ("SUBAGENT_ABORTED", "subagent run was cancelled"),
    "error": ("SUBAGENT_FAILED", "subagent run failed"),
    "max-tokens": ("SUBAGENT_MAX_TOKENS", "subagent run hit its token limit before finishing"),
    "refusal": ("SUBAGENT_REFUSED", "subagent declined the task"),
}


class ToolSubagentConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`provider`: the subagent provider the tool delegates to (required). `tool_name`: what the model calls;
    by default `subagent` for `spawn` and `subagent_<provider>` otherwise (`subagent_fork` for `fork`).
    `background_mode`: `one-shot` (the call waits for the child's answer) or `continuable` (the child runs in the
    background, the call returns its durable id; reports and settlement notices arrive in this agent's inbox, and
    a `send_message` tool gives the child more work). `run_in_background`: in one-shot mode, whether a call may
    run the child as a background job (`run_in_background: true` returns a job id; needs `dsh.runtime.jobs`)."""

    provider: str
    tool_name: str | None = None
    background_mode: Literal["one-shot", "continuable"] = "one-shot"
    run_in_background: bool = False


def default_tool_name(provider: str) -> str:
    return "subagent" if provider == "spawn" else f"subagent_{provider}"


def render_result(result: SubagentResult) -> ToolResult:
    """A completed run returns the child's answer; any other ending is an error result with a headline, what
    failed, and the output the child had written before it ended. The result's `meta` goes along (logged, never
    shown to the model)."""
    if result.stop_reason == "completed":
        return ToolResult(result.output or "(the subagent finished without a text answer)", meta=result.meta)
    code, headline = _HEADLINES.get(
        result.stop_reason, ("SUBAGENT_FAILED", f"subagent run ended abnormally ({result.stop_reason})")
    )
    text = f"Error: {headline}"
    if result.diagnostic:
        text += f"\nDiagnostic: {result.diagnostic}"
    if result.output:
        text += f"\nPartial output before the run ended:\n{result.output}"
    return ToolResult(text, is_error=True, code=code, meta=result.meta)


async def start_job(
    jobs: JobService, subagents: SubagentView, provider: str, request: SubagentRequest, *, tool: str
) -> Job:
    """Run a one-shot child as a final-output job of its parent: its result is the child's answer, or the error
    text a foreground call would have returned (the job then settles as failed)."""

    async def work(io: JobIO) -> JobEnd:
        try:
            async with subagents.start(provider, request) as run:
                result = render_result(await run.result())
        except SubagentError as error:
            return JobEnd("failed", output=f"Error: {error}", error=str(error))
        if result.is_error:
            return JobEnd("failed", output=result.text, error=result.text.splitlines()[0])
        return JobEnd("completed", output=result.text)

    return await jobs.of(request.parent).start(
        "final-output",
        tool,
        work,
        label=request.label,
        call_id=request.spawned_by.call_id,
        turn=request.spawned_by.turn,
        step=request.spawned_by.step,
    )


def subagent_tool(
    name: str,
    provider: SubagentProvider,
    subagents: SubagentView,
    *,
    children: Children | None = None,
    jobs: JobService | None = None,
) -> Tool:
    """The tool `name`, worded from `provider`, delegating to the provider of that name through `subagents`. With
    `children` it is continuable: it starts children in the background (see `_continuable`); with `jobs`, a
    one-shot call with `run_in_background: true` runs its child as a background job of the calling agent."""
    continuable = children is not None
    with_jobs = jobs is not None and not continuable
    words = wording(provider.inherits_parent_context, continuable=continuable, jobs=with_jobs)
    provider_name = provider.name

    async def execute(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        parent = context.agent
        if parent is None:
            return ToolResult.error(
                "NO_CALLING_AGENT",
                f'the "{name}" tool requires a calling agent: it runs only inside an agent turn',
            )
        background = arguments.get("run_in_background", True) if continuable else False
        if arguments.get("run_in_background") and not continuable and jobs is None:
            return ToolResult.error(
                "INVALID_ARGUMENTS",
                f'run_in_background is disabled for this tool instance ("{name}"): its config does not enable '
                "background runs; call it again without run_in_background and wait for the result",
            )
        prompt = arguments["prompt"]
        if not prompt.strip():
            return ToolResult.error(
                "INVALID_ARGUMENTS", f'the "{name}" tool needs a non-empty prompt: the task for the subagent'
            )
        request = SubagentRequest(
            prompt=prompt,
            parent=parent,
            spawned_by=SpawnedBy(turn=context.turn, step=context.step, call_id=context.call_id),
            label=arguments["description"] or None,
        )
        try:
            if background and children is not None:
                child_id = await start_continuable(
                    subagents, provider_name, dataclasses.replace(request, mode="continuable"), children
                )
                return ToolResult(f"started subagent {child_id}")
            if arguments.get("run_in_background") and jobs is not None:
                background_request = dataclasses.replace(request, background=True)
                job = await start_job(jobs, subagents, provider_name, background_request, tool=name)
                return ToolResult(f"started background subagent job {job.id}", meta={"jobId": job.id})
            async with subagents.start(provider_name, request) as run:
                result = await run.result()
        except SubagentError as error:
            return ToolResult.error(error.code, f"Error: {error}")
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as error:
            # Contained: a child that could not be run is the parent's information, never its crash.
            return ToolResult.error(
                "SUBAGENT_FAILED",
                f"Error: subagent run failed\nDiagnostic: {type(error).__name__}: {error}",
            )
        return render_result(result)

    return Tool(
        name=name,
        description=words.description,
        parameters=parameters(provider.inherits_parent_context, continuable=continuable, jobs=with_jobs),
        execute=execute,
    )


def _apply(ctx: Context, config: ToolSubagentConfig) -> None:
    name = config.tool_name or default_tool_name(config.provider)
    if not TOOL_NAME.fullmatch(name):
        raise ConfigError(
            f'tool name "{name}" is invalid; use 1-64 letters, digits, "_" or "-" (set `tool_name`)',
            plugin=ctx.plugin_id,
            path="$.tool_name",
        )
    subagents = ctx.get(SUBAGENTS)
    tools = ctx.get(TOOLS)
    mounted: list[
        tuple[SubagentProvider, Callable[[], None]]
    ] = []  # at most one: the provider the tool is worded from

    children = Children() if config.background_mode == "continuable" else None
    jobs = (
        background_jobs(ctx, tool=name)
        if config.run_in_background and config.background_mode == "one-shot"
        else None
    )

    def mount(provider: SubagentProvider) -> None:
        disposers = [tools.register(subagent_tool(name, provider, subagents, children=children, jobs=jobs))]
        if children is not None:
            disposers.append(tools.register(send_message_tool(children)))

        def disposer() -> None:
            for undo in reversed(disposers):
                undo()

        mounted.append((provider, disposer))

    async def on_added(provider: SubagentProvider) -> None:
        if provider.name == config.provider and not mounted:
            mount(provider)

    async def on_removed(provider: SubagentProvider) -> None:
        if mounted and mounted[0][0] is provider:
            _, disposer = mounted.pop()
            disposer()

    if children is not None and ctx.has(SYSTEM_PROMPT):
        # the habits of background delegation, said while the tool exists (empty while its provider is absent)
        text = continuable_section(name)
        ctx.get(SYSTEM_PROMPT).section(
            PromptSection(f"tool:{name}", CONTINUABLE_ORDER, lambda: text if mounted else "")
        )

    # Listen first, then look: a provider registered in between cannot be missed.
    ctx.on(PROVIDER_ADDED, on_added)
    ctx.on(PROVIDER_REMOVED, on_removed)
    provider = subagents.get(config.provider)
    if provider is not None:
        mount(provider)
    else:
        log.info(
            'subagent provider "%s" not registered yet; the "%s" tool will register when it appears',
            config.provider,
            name,
        )


plugin = Plugin(
    name="tool-subagent",
    apply=_apply,
    config=ToolSubagentConfig,
    needs=(SUBAGENTS, TOOLS),
    description="a subagent tool bound to one provider, present while the provider is, worded from it",
)
