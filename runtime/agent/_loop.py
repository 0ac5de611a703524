"""The turn: the only place turns and steps happen. One turn is `turn/start`, then steps (assemble once, render
once, `agent/pre-step`, `step/start` and the entering messages, `agent/request`, `request/header` when it changed,
`request/context` when the provider, model or context window changed, the stream with every chunk logged, `assistant/message`, the tool calls) while the model calls tools, then
`turn/end`, which is owed from `turn/start` on whatever happens (errors, cancellation)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import msgspec

from dsh.runtime.kernel.errors import DshError
from dsh.runtime.llm import (
    LLM,
    AssistantBlock,
    AssistantMessage,
    CallConfig,
    CallKey,
    CallStream,
    FinishAborted,
    FinishError,
    FinishMaxTokens,
    FinishReason,
    LlmCallError,
    LlmFailure,
    LlmRequest,
    MessageId,
    ModelSource,
    PluginSource,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    ToolSource,
    UserBlock,
    UserMessage,
    UserSource,
    error_chain,
)
from dsh.runtime.prompt import SYSTEM_PROMPT, AssembleContext, render_context_snapshot, render_prompt
from dsh.runtime.session import (
    AbortKind,
    AbortReason,
    AssistantChunk,
    AssistantChunkData,
    AssistantMessageData,
    AssistantMessageEvent,
    EpochHeader,
    HeaderConfig,
    HeaderReason,
    RequestContext,
    RequestContextData,
    RequestHeader,
    RequestHeaderData,
    StepData,
    StepEnd,
    StepStart,
    ToolCall,
    ToolCallData,
    ToolResultData,
    ToolResultError,
    ToolResultEvent,
    TurnEnd,
    TurnEndData,
    TurnEndReason,
    TurnStart,
    TurnStartData,
    UserMessageEvent,
)
from dsh.runtime.tools import TOOLS, ToolContext, ToolResult

from ._agent import Agent
from ._events import (
    ERROR,
    PRE_STEP,
    PROMPT_SUBMIT,
    REQUEST,
    REQUEST_ERROR,
    STEP_INPUT,
    STEP_RESULTS,
    TURN_STOPPING,
    AddContext,
    AgentError,
    Block,
    Fail,
    PreStep,
    Proceed,
    PromptSubmit,
    RequestConfig,
    RequestFailure,
    RequestInfo,
    Retry,
    StepInput,
    StepResults,
    TurnStopping,
)
from ._outcome import TurnOutcome
from ._state import SNAPSHOT_FORM

__all__ = ["ABORTED", "NoModelError", "TurnLimitError", "assemble_context_for", "run_turn"]

ABORTED = "ABORTED"
_SNAPSHOT_SOURCE = PluginSource(plugin="system-prompt", form=SNAPSHOT_FORM)


class NoModelError(DshError, ValueError):
    """A step would be sent with no provider or no model."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(
            f'agent "{agent_id}" has no provider/model: set AgentOptions.provider and AgentOptions.model or '
            "supply both via the agent/request waterfall"
        )
        self.agent_id = agent_id


class TurnLimitError(DshError, RuntimeError):
    """The model kept calling tools past `AgentOptions.max_steps` steps in one turn."""

    code = "MAX_STEPS"

    def __init__(self, agent_id: str, max_steps: int) -> None:
        super().__init__(
            f'agent "{agent_id}" reached max_steps={max_steps} in one turn while the model kept calling tools; '
            "raise AgentOptions.max_steps if such turns are expected"
        )
        self.max_steps = max_steps


def assemble_context_for(agent: Agent) -> AssembleContext:
    """The assemble context of `agent`'s next step: its scoped context (which selects its layers and listeners)
    and itself, which the `model` and `cwd` variables project."""
    return AssembleContext(ctx=agent.ctx, agent=agent)


def _header_config(provider: str, model: str, config: CallConfig) -> HeaderConfig:
    """The header config of a call: provider, model and every set field of `config`. The wire flattens the call
    config beside the route, so the header keeps its own Struct, built here from the `CallConfig` field for field:
    a field added to `CallConfig` and not to `HeaderConfig` fails here, on the first call."""
    return HeaderConfig(provider=provider, model=model, **msgspec.structs.asdict(config))


def _failure_of(error: BaseException) -> LlmFailure:
    if isinstance(error, LlmCallError):
        return error.failure
    code = getattr(error, "code", None)
    return LlmFailure(message=error_chain(error), code=code if isinstance(code, str) else "UNKNOWN")


def _error_name(code: str) -> str:
    return "".join(part.title() for part in code.split("_")) + "Error"


@dataclass
class _Streamed:
    """One attempt of a model call: its stream (with the runtime's assembly of what arrived), the route it went to,
    and the seqs of the chunks logged so far."""

    calls: CallStream
    provider: str
    model: str
    seqs: list[int] = field(default_factory=list)


class _Turn:
    """One turn in flight: what has to be closed if it ends early."""

    def __init__(self, agent: Agent, turn: int, cancelled_by: AbortKind = "user") -> None:
        self.agent = agent
        self.turn = turn
        self.cancelled_by = cancelled_by
        self.step = 0
        self.step_open = False
        self.max_tokens = False
        self.text = ""
        self.ended = False

    # ------------------------------------------------------------------ the happy path

    async def run(self) -> TurnOutcome:
        agent = self.agent
        while True:
            if self.step >= agent.options.max_steps:
                raise TurnLimitError(agent.id, agent.options.max_steps)
            # the first step takes the queued prompt and any steering, later steps the steering (spec §2.1)
            entering = await agent.claim(*(("next-step", "next-turn") if self.step == 0 else ("next-step",)))
            self.step += 1
            assembly = await agent.ctx.get(SYSTEM_PROMPT).assemble(assemble_context_for(agent))
            system = render_prompt(assembly)
            snapshot = render_context_snapshot(assembly)
            # the assembled schemas are the request's own: frozen values, handed on, not copied
            tools = tuple(assembly.tools)
            added = AddContext()
            prompts = [item for item in entering if isinstance(item.message.source, UserSource)]
            if self.step == 1 and prompts:
                text = "".join(
                    block.text
                    for item in prompts
                    for block in item.message.content
                    if isinstance(block, TextBlock)
                )
                decision = await agent.ctx.waterfall(
                    PROMPT_SUBMIT, AddContext(), PromptSubmit(agent, self.turn, text)
                )
                if not isinstance(decision, AddContext):
                    return await self.end(TurnEndReason(kind="blocked", message=decision.reason))
                added = decision
            gate = await agent.ctx.waterfall(
                PRE_STEP, Proceed(), PreStep(agent, self.turn, self.step, system, agent.messages(), tools)
            )
            if isinstance(gate, Block):
                return await self.end(TurnEndReason(kind="blocked", message=gate.reason))
            step_input = await agent.ctx.waterfall(
                STEP_INPUT,
                (),
                StepInput(agent, self.turn, self.step, tuple(item.message for item in entering)),
            )
            await agent.append(StepStart(data=StepData(turn=self.turn, step=self.step)))
            self.step_open = True
            for item in entering:
                await agent.append(UserMessageEvent(data=item.message, surface_op="append"), written=item.raw)
            if added.texts:
                await self.user_message(
                    tuple(TextBlock(text) for text in added.texts),
                    added.source or PluginSource(plugin="hooks"),
                )
            for extra in step_input:
                await agent.append(UserMessageEvent(data=extra, surface_op="append"))
            if snapshot and snapshot != agent.snapshot:  # the agent's state: the newest on the surface
                await self.user_message((TextBlock(snapshot),), _SNAPSHOT_SOURCE)
            route = await agent.ctx.waterfall(
                REQUEST,
                RequestConfig(agent.options.provider, agent.options.model, agent.options.config),
                RequestInfo(agent, self.turn, self.step),
            )
            if not route.provider or not route.model:
                raise NoModelError(agent.id)
            await self.log_header(
                EpochHeader(
                    config=_header_config(route.provider, route.model, route.config),
                    system=system or None,
                    tools=tools or None,
                )
            )
            await self.log_context(route.provider, route.model)
            message = await self.call(route, system, tools)
            if message is None:  # the model's stream was aborted (a recorded cancellation)
                return await self.end(
                    TurnEndReason(kind="aborted", reason=AbortReason(kind=self.cancelled_by))
                )
            calls = [block for block in message if isinstance(block, ToolCallBlock)]
            if calls:
                await self.run_tools(calls)
                after = await agent.ctx.waterfall(STEP_RESULTS, (), StepResults(agent, self.turn, self.step))
                for extra in after:
                    await agent.append(UserMessageEvent(data=extra, surface_op="append"))
            await agent.append(StepEnd(data=StepData(turn=self.turn, step=self.step)))
            self.step_open = False
            if not calls and not agent.pending("next-step"):  # a Stop hook may queue steering here
                await agent.ctx.emit(TURN_STOPPING, TurnStopping(agent, self.turn, self.step))
            if not calls and not agent.pending("next-step"):  # steering keeps the turn going
                return await self.end(TurnEndReason(kind="max-tokens" if self.max_tokens else "completed"))

    async def user_message(self, blocks: tuple[UserBlock, ...], source: UserSource | PluginSource) -> None:
        message = UserMessage(id=self.new_id(), content=blocks, source=source)
        await self.agent.append(UserMessageEvent(data=message, surface_op="append"))

    def new_id(self) -> MessageId:
        return MessageId(self.agent.log.ids.new_id("message"))

    async def log_header(self, header: EpochHeader) -> None:
        """`request/header` when it differs from the one this run last wrote (`initial` for the log's first,
        `resume` for the first of a run over a log that has one, `change` after that); read from the agent's state."""
        agent = self.agent
        state = agent.state
        if state.header_written and header == state.header:
            return
        reason: HeaderReason = (
            "change" if state.header_written else ("initial" if state.header is None else "resume")
        )
        await agent.append(RequestHeader(data=RequestHeaderData(header=header, reason=reason)))

    async def log_context(self, provider: str, model: str) -> None:
        """`request/context{provider, model, contextWindow?}` when it differs from the session's last one (the
        window is what `LlmRuntime` says the route's adapter knows; absent when it does not know)."""
        agent = self.agent
        window = agent.ctx.get(LLM).context_window(provider, model)
        context = RequestContextData(provider=provider, model=model, context_window=window)
        if context == agent.request_context:
            return
        await agent.append(RequestContext(data=context))

    async def call(
        self, route: RequestConfig, system: str, tools: tuple[ToolSchema, ...]
    ) -> tuple[AssistantBlock, ...] | None:
        """The model call of this step, attempts included; returns the logged message's content, or None when the
        stream was aborted. An unretried error finish raises `LlmCallError`. A call cancelled (mid-stream, or
        waiting to retry) keeps what its last attempt streamed, as `assembler/message{interrupted}`."""
        agent = self.agent
        provider, model = route.provider or "", route.model or ""
        attempt = 1
        streamed: _Streamed | None = None
        try:
            while True:
                await agent.log.flush()
                request = LlmRequest(
                    provider=provider,
                    model=model,
                    messages=agent.messages(),
                    system=system,
                    tools=tools,
                    config=route.config,
                    session_id=agent.id,
                    call=CallKey(turn=self.turn, step=self.step, attempt=attempt),
                )
                streamed = _Streamed(agent.ctx.get(LLM).stream(request), provider, model)
                reason = await self.stream(streamed)
                if isinstance(reason, FinishAborted):
                    await self.keep_interrupted(streamed)
                    return None
                if isinstance(reason, FinishError):
                    failure = RequestFailure(agent, self.turn, self.step, attempt, provider, reason.failure)
                    decision = await agent.ctx.waterfall(REQUEST_ERROR, Fail(), failure)
                    if isinstance(decision, Retry):
                        attempt += 1
                        continue
                    raise LlmCallError(reason.failure)
                break
        except anyio.get_cancelled_exc_class():
            if streamed is not None:
                with anyio.CancelScope(shield=True):
                    await self.keep_interrupted(streamed)
            raise
        assembled = streamed.calls.assembled
        message = assembled.message(id=self.new_id(), provider=provider, model=model)
        if isinstance(reason, FinishMaxTokens):
            self.max_tokens = True
        texts = [b.text for b in message.content if isinstance(b, TextBlock)]
        if texts:
            self.text = "".join(texts)
        await agent.append(
            AssistantMessageEvent(
                data=AssistantMessageData(
                    turn=self.turn, step=self.step, message=message, usage=assembled.usage
                ),
                surface_op="append",
                source_event_seqs=tuple(streamed.seqs),
            )
        )
        return message.content

    async def stream(self, streamed: _Streamed) -> FinishReason:
        """Log each chunk of the call as it arrives; return how the call finished."""
        agent = self.agent
        async with aclosing(streamed.calls) as chunks:
            async for chunk in chunks:
                stored = await agent.append(
                    AssistantChunk(data=AssistantChunkData(turn=self.turn, step=self.step, chunk=chunk))
                )
                streamed.seqs.append(stored.seq)
        finish = streamed.calls.assembled.finish
        assert finish is not None, "LlmRuntime ends every stream with a finish chunk"
        return finish.reason

    async def run_tools(self, calls: Sequence[ToolCallBlock]) -> None:
        """Log every call, run them concurrently, then log every result in call order. Calls still running when
        the turn is cancelled are logged `ABORTED`."""
        agent = self.agent
        call_seqs: list[int] = []
        for call in calls:
            stored = await agent.append(
                ToolCall(
                    data=ToolCallData(
                        turn=self.turn,
                        step=self.step,
                        call_id=call.id,
                        name=call.name,
                        arguments=call.arguments,
                    )
                )
            )
            call_seqs.append(stored.seq)
        await agent.log.flush()
        results: dict[int, ToolResult] = {}
        tools = agent.ctx.get(TOOLS)
        cwd = agent.cwd or Path.cwd()

        async def run_one(index: int, call: ToolCallBlock) -> None:
            context = ToolContext(
                ctx=agent.ctx,
                cwd=cwd,
                call_id=call.id,
                log=agent.log,
                turn=self.turn,
                step=self.step,
                agent=agent,
            )
            results[index] = await tools.execute(call, context)

        try:
            async with anyio.create_task_group() as group:
                for index, call in enumerate(calls):
                    group.start_soon(run_one, index, call)
        finally:
            with anyio.CancelScope(shield=True):
                for index, call in enumerate(calls):
                    result = results.get(index) or ToolResult.error(
                        ABORTED, "the tool call was cancelled before it finished; its effects are unknown"
                    )
                    await self.tool_result(call, result, call_seqs[index])
        # context a hook added for the next step, queued once every result is logged
        for index in range(len(calls)):
            done = results.get(index)
            for added in done.context if done is not None else ():
                await agent.queue(
                    tuple(TextBlock(text) for text in added.texts),
                    target="next-step",
                    source=PluginSource(plugin=added.plugin),
                    inline=True,
                )

    async def tool_result(self, call: ToolCallBlock, result: ToolResult, call_seq: int) -> None:
        message = UserMessage(
            id=self.new_id(),
            content=(
                ToolResultBlock(
                    tool_call_id=call.id,
                    content=(TextBlock(result.text), *result.images),
                    is_error=result.is_error,
                ),
            ),
            source=ToolSource(call.id),
        )
        error = None
        if result.is_error:
            code = result.code or "TOOL_ERROR"
            error = ToolResultError(name=_error_name(code), code=code)
        await self.agent.append(
            ToolResultEvent(
                data=ToolResultData(
                    turn=self.turn,
                    step=self.step,
                    message=message,
                    error=error,
                    meta=dict(result.meta) or None,
                ),
                surface_op="append",
                source_event_seqs=(call_seq,),
            )
        )

    # ------------------------------------------------------------------ endings

    async def keep_interrupted(self, streamed: _Streamed) -> None:
        """A stream cut short keeps its visible text and reasoning as `assistant/message{interrupted}`."""
        content = streamed.calls.assembled.interrupted_content()
        if not content:
            return
        partial = AssistantMessage(
            id=self.new_id(),
            content=content,
            source=ModelSource(provider=streamed.provider, model=streamed.model),
        )
        await self.agent.append(
            AssistantMessageEvent(
                data=AssistantMessageData(turn=self.turn, step=self.step, message=partial, interrupted=True),
                surface_op="append",
                source_event_seqs=tuple(streamed.seqs),
            )
        )

    async def end(self, reason: TurnEndReason) -> TurnOutcome:
        agent = self.agent
        if self.step_open:
            await agent.append(StepEnd(data=StepData(turn=self.turn, step=self.step)))
            self.step_open = False
        await agent.append(TurnEnd(data=TurnEndData(turn=self.turn, reason=reason)))
        self.ended = True  # a cancellation from here on (the flush) leaves the turn as it ended
        await agent.log.flush()
        assert reason.kind != "interrupted", "only crash repair ends a turn interrupted"
        return TurnOutcome(turn=self.turn, kind=reason.kind, text=self.text, failure=reason.error)

    async def fail(self, error: Exception) -> TurnOutcome:
        failure = _failure_of(error)
        outcome = await self.end(TurnEndReason(kind="error", error=failure))
        step = self.step if self.step else None
        await self.agent.ctx.emit(ERROR, AgentError(self.agent, self.turn, step, error))
        return TurnOutcome(turn=self.turn, kind="error", text=outcome.text, failure=failure, error=error)

    async def abort(self, who: AbortKind) -> None:
        if self.ended:
            return
        await self.end(TurnEndReason(kind="aborted", reason=AbortReason(kind=who)))


async def run_turn(agent: Agent, *, cancelled_by: AbortKind = "user") -> TurnOutcome:
    """Run one turn of `agent`, started by the input waiting in its inbox (see the module docstring). The caller
    holds the agent's turn lock. A cancellation ends it `aborted{cancelled_by}`."""
    turn = _Turn(agent, agent.log.state.last_turn + 1, cancelled_by)
    await agent.append(TurnStart(data=TurnStartData(turn=turn.turn)))
    try:
        return await turn.run()
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await turn.abort(cancelled_by)
        raise
    except Exception as error:  # every error inside a turn ends it; the agent lives on (spec §2.2)
        return await turn.fail(error)
