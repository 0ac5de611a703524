"""The `jobs` plugin: provides the job service (`JOBS`) and, while some tool instance has background jobs enabled,
the job tools and the jobs prompt section. Load it after `dsh.runtime.prompt` and `dsh.runtime.tools` and before any tool
plugin that enables `run_in_background`."""

from __future__ import annotations

from collections.abc import Callable

from dsh.runtime.kernel import ConfigError, Context, Plugin
from dsh.runtime.prompt import SYSTEM_PROMPT
from dsh.runtime.tools import TOOLS

from ._service import JOBS, JobsConfig, JobService
from ._tools import SECTION, job_tools

__all__ = ["background_jobs", "plugin"]


def _apply(ctx: Context, config: JobsConfig) -> None:
    if config.wait_ms <= 0 or config.max_wait_ms < config.wait_ms:
        raise ConfigError(
            f"wait_ms must be positive and at most max_wait_ms (got {config.wait_ms} and {config.max_wait_ms})",
            plugin=ctx.plugin_id,
            path="$.wait_ms",
        )
    service: JobService | None = None

    def mount() -> Callable[[], None]:
        assert service is not None
        tools, prompt = ctx.get(TOOLS), ctx.get(SYSTEM_PROMPT)
        undo = [tools.register(tool) for tool in job_tools(service)]
        undo.append(prompt.section(SECTION))

        def unmount() -> None:
            for disposer in reversed(undo):
                disposer()

        return unmount

    service = JobService(config, mount)
    ctx.provide(JOBS, service)


def background_jobs(ctx: Context, *, tool: str) -> JobService:
    """For a tool plugin whose config enables `run_in_background`: the job service, counted as enabled until the
    plugin unloads (the job tools exist while some plugin is). A `ConfigError` when `dsh.runtime.jobs` is not loaded."""
    if not ctx.has(JOBS):
        raise ConfigError(
            f'"{tool}" has run_in_background enabled, which needs the job service: load `use: jobs` (after '
            "`prompt` and `tools`) before this plugin",
            plugin=ctx.plugin_id,
            path="$.run_in_background",
        )
    service = ctx.get(JOBS)
    ctx.effect(service.enable())
    return service


plugin = Plugin(
    name="jobs",
    apply=_apply,
    config=JobsConfig,
    needs=(SYSTEM_PROMPT, TOOLS),
    provides=(JOBS,),
    description="background jobs of agents: the job service, and the job_* tools while a tool enables them",
)
