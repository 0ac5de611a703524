"""The `retry` plugin: answers `agent/request-error` with a new attempt in the same step when the policy allows,
logging `llm/retry` (the decision and its wait) and `llm/retry-started` (the wait, on `RETRY_CLOCK`, is over) in
the session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dsh.runtime.agent import REQUEST_ERROR, ErrorDecision, RequestFailure, Retry
from dsh.runtime.kernel import Context, Plugin
from dsh.runtime.session import LlmRetry, LlmRetryData, LlmRetryStarted, LlmRetryStartedData

from .clock import REAL_TIME, RETRY_CLOCK
from .policy import RetryConfig, delay_ms, policy_key

__all__ = ["plugin"]


def _apply(ctx: Context, config: RetryConfig) -> None:
    key = policy_key(config)
    codes = frozenset(config.codes)

    async def on_error(
        decision: ErrorDecision,
        failed: RequestFailure,
        next_: Callable[[ErrorDecision], Awaitable[ErrorDecision]],
    ) -> ErrorDecision:
        retry = failed.attempt  # attempt 1 failed: this would be retry 1
        if failed.failure.code not in codes or retry > config.max_retries:
            return await next_(decision)
        agent = failed.agent
        wait = delay_ms(config, retry, failed.failure, f"{agent.id}/{failed.turn}/{failed.step}/{retry}")
        retry_id = agent.log.ids.new_id("retry")
        await agent.append(
            LlmRetry(
                data=LlmRetryData(
                    retry_id=retry_id,
                    turn=failed.turn,
                    step=failed.step,
                    provider=failed.provider,
                    mode="normal",
                    policy_key=key,
                    retry=retry,
                    max_retries=config.max_retries,
                    delay_ms=wait,
                    failure=failed.failure,
                )
            )
        )
        await agent.log.flush()
        clock = agent.ctx.get(RETRY_CLOCK) if agent.ctx.has(RETRY_CLOCK) else REAL_TIME
        await clock.wait(wait)
        await agent.append(
            LlmRetryStarted(
                data=LlmRetryStartedData(retry_id=retry_id, turn=failed.turn, step=failed.step, retry=retry)
            )
        )
        return Retry()

    ctx.on(REQUEST_ERROR, on_error)


plugin = Plugin(
    name="retry",
    apply=_apply,
    config=RetryConfig,
    description="retries failed model calls as new attempts in the same step (back-off with jitter, Retry-After)",
)
