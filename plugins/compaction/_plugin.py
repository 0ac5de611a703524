"""The `compaction` plugin: provides `Compaction` and hangs it on the agent loop's events."""

from __future__ import annotations

from dsh.runtime.agent import COMPACT, EVENT, PRE_STEP, REQUEST_ERROR
from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.llm import LLM

from ._config import Config
from ._service import COMPACTION, Compaction

__all__ = ["plugin"]


def _apply(ctx: Context, config: Config) -> None:
    compaction = Compaction(config)
    ctx.provide(COMPACTION, compaction)
    ctx.on(PRE_STEP, compaction.on_pre_step)
    ctx.on(REQUEST_ERROR, compaction.on_request_error)
    ctx.on(EVENT, compaction.on_event)
    ctx.on(COMPACT, compaction.on_compact)


plugin = Plugin(
    name="compaction",
    apply=_apply,
    config=Config,
    needs=(LLM,),
    provides=(COMPACTION,),
    description="token meter, summary compaction on agent/pre-step, tool-result pruning and overflow recovery",
)
