"""`Compaction` (service `COMPACTION`): measures an agent's next request, prunes old tool results and summarises
older history with one model call, logging every change as compaction events and surface replacements; and the
listeners that run it on `agent/pre-step` and on a `CONTEXT_WINDOW_EXCEEDED` finish (`agent/request-error`)."""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec

from dsh.runtime.agent import (
    Agent,
    AgentEvent,
    Compacted,
    CompactRequest,
    ErrorDecision,
    PreStep,
    Proceed,
    RequestFailure,
    Retry,
    StepGate,
)
from dsh.runtime.kernel import Next, ServiceKey
from dsh.runtime.llm import (
    LLM,
    AssistantBlock,
    CallConfig,
    CallKey,
    FailureCode,
    FinishAborted,
    FinishError,
    LlmFailure,
    LlmRequest,
    Message,
    MessageId,
    PluginSource,
    TextBlock,
    TokenUsage,
    ToolSchema,
    UserMessage,
)
from dsh.runtime.session import (
    PROJECTED_TYPES,
    AssistantMessageData,
    AssistantMessageEvent,
    BracketData,
    CompactionEnd,
    CompactionPrune,
    CompactionStart,
    CompactionSummary,
    EpochHeader,
    PruneData,
    Replace,
    ShadowedRange,
    SummaryData,
    SurfaceNode,
    ToolResultData,
    ToolResultEvent,
    UserMessageEvent,
    decode_data,
    encode_data,
    project,
)

from ._config import Config
from ._meter import Calibration, TokenMeter
from ._plan import (
    CHECKPOINT_PLUGIN,
    Node,
    is_checkpoint,
    prune_candidates,
    pruned_data,
    pruned_placeholder,
    retained_cut,
    transcript,
)

__all__ = [
    "CHECKPOINT_PREAMBLE",
    "COMPACTION",
    "COMPACTION_PURPOSE",
    "EMPTY_SUMMARY",
    "SUMMARY_TOO_LONG",
    "Compaction",
    "CompactionOutcome",
]

log = logging.getLogger("dsh.compaction")

COMPACTION_PURPOSE = "compaction"
"""`CallKey.purpose` of a summariser call (README "Replay" states its `step` and `attempt`)."""

CHECKPOINT_PREAMBLE = (
    "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up "
    "context. Treat the captured context as established background and build on it without restating it. "
    "Continue the task directly from the messages that follow, without acknowledging this checkpoint."
)
_OPEN = "\n\n<compacted-summary>"
_CLOSE = "</compacted-summary>"

EMPTY_SUMMARY = "EMPTY_SUMMARY"
"""`compaction/end` failure code: the summariser answered no text."""
SUMMARY_TOO_LONG = "SUMMARY_TOO_LONG"
"""`compaction/end` failure code: the checkpoint would not be smaller than the history it replaces."""


_RESULT_DATA = msgspec.json.Decoder(ToolResultData)


@dataclass(frozen=True)
class CompactionOutcome:
    """What one `compact` did. `before`/`after` are the meter's raw estimates of the history (the projected
    messages); `pruned` the `tool/result` seqs whose content was replaced; `summarised` the seqs a checkpoint
    replaced; `failure` why the summariser's answer was not used (the history is then as pruning left it)."""

    before: int
    after: int
    pruned: tuple[int, ...] = ()
    summarised: tuple[int, ...] = ()
    compaction_id: str | None = None
    failure: LlmFailure | None = None

    @property
    def shrank(self) -> bool:
        return self.after < self.before


@dataclass
class _AgentState:
    calibration: Calibration | None = None
    nodes: dict[int, Node] = field(default_factory=dict)
    calls: dict[tuple[int, int], int] = field(default_factory=dict)
    recoveries: dict[tuple[int, int], int] = field(default_factory=dict)
    failed_turn: int | None = None


@dataclass(frozen=True)
class _Summary:
    call: CallKey
    blocks: tuple[AssistantBlock, ...]
    usage: TokenUsage | None
    failure: LlmFailure | None


class Compaction:
    """Keeps every agent of the host inside its model's context window (README.md says how)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.meter = TokenMeter(chars_per_token=config.chars_per_token)
        self._agents: weakref.WeakKeyDictionary[Agent, _AgentState] = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ measuring

    def window(self, model: str | None, agent: Agent | None = None) -> int:
        """The context window of `model`: config `context_windows[model]`, else the window the last
        `request/context` of `agent`'s session stated for `model` (its route's), else config `context_window`."""
        return self.config.window(model, _logged_window(agent, model))

    def limit(self, model: str | None, agent: Agent | None = None) -> int:
        """The estimate past which compaction runs before a step: `threshold_ratio` of the window."""
        return math.floor(self.window(model, agent) * self.config.threshold_ratio)

    def calibration(self, agent: Agent) -> Calibration | None:
        """The agent's calibration: from its newest response that reported usage (None: none yet)."""
        return self._state(agent).calibration

    def nodes(self, agent: Agent) -> list[Node]:
        """The agent's surface, each node decoded and measured once."""
        state = self._state(agent)
        cache, state.nodes = state.nodes, {}
        out: list[Node] = []
        for surface in agent.log.state.surface.nodes:
            node = cache.get(surface.seq) or Node.of(
                surface.seq, surface.type, surface.data, surface.typed or _message(surface), self.meter
            )
            state.nodes[surface.seq] = node
            out.append(node)
        return out

    def raw_estimate(
        self, agent: Agent, *, system: str, tools: Sequence[ToolSchema | Mapping[str, Any]]
    ) -> int:
        """The meter's uncalibrated estimate of a request of `agent`'s history now, with `system` and `tools`."""
        history = sum(node.tokens for node in self.nodes(agent))
        return self.meter.text(system) + self.meter.tools(tools) + history

    def estimate(self, agent: Agent, *, system: str, tools: Sequence[ToolSchema | Mapping[str, Any]]) -> int:
        """The calibrated estimate of a request of `agent`'s history now, with `system` and `tools`."""
        raw = self.raw_estimate(agent, system=system, tools=tools)
        calibration = self._state(agent).calibration
        return raw if calibration is None else calibration.apply(raw)

    # ------------------------------------------------------------------ compacting

    async def compact(
        self,
        agent: Agent,
        *,
        turn: int,
        step: int,
        system: str,
        tools: Sequence[ToolSchema | Mapping[str, Any]],
        force: bool = False,
    ) -> CompactionOutcome:
        """Compact `agent`'s history now, inside `turn` (before or during `step`): prune old large tool results,
        then, if the estimate still passes the limit (or `force`), summarise everything older than the kept tail
        with one model call. Returns what changed; a failed summariser call is logged and reported, not raised."""
        state = self._state(agent)
        nodes = self.nodes(agent)
        before = sum(node.tokens for node in nodes)
        cut = retained_cut(nodes, self.config.retain_ratio)
        if cut == 0:
            return CompactionOutcome(before, before)
        pruned: tuple[int, ...] = ()
        if self.config.prune:
            pruned = await self._prune(agent, turn, nodes[:cut])
            if pruned:
                nodes = self.nodes(agent)
        _, model = self._route(agent)
        if not force and self.estimate(agent, system=system, tools=tools) <= self.limit(model, agent):
            return CompactionOutcome(before, sum(node.tokens for node in nodes), pruned)
        compaction_id, summarised, failure = await self._summarise(agent, state, turn, step, nodes[:cut])
        after = sum(node.tokens for node in self.nodes(agent))
        return CompactionOutcome(before, after, pruned, summarised, compaction_id, failure)

    async def _prune(self, agent: Agent, turn: int, older: Sequence[Node]) -> tuple[int, ...]:
        candidates = prune_candidates(older, self.config.prune_min_tokens, self.meter)
        if not candidates:
            return ()
        compaction_id = agent.log.ids.new_id("compaction")
        record = await agent.append(
            CompactionPrune(
                data=PruneData(
                    compaction_id=compaction_id,
                    turn=turn,
                    shadowed_seqs=tuple(node.seq for node in candidates),
                    shadowed_token_count=sum(node.tokens for node in candidates),
                )
            )
        )
        for node in candidates:
            placeholder = pruned_placeholder(self.meter.content(node.message))
            written = pruned_data(node, placeholder)
            # the recorded event's data as written, content replaced: fields dsh does not model are kept
            text = encode_data(written) if "message" in written else None
            data = _RESULT_DATA.decode(text) if text is not None else msgspec.convert(written, ToolResultData)
            await agent.append(
                ToolResultEvent(
                    data=data,
                    surface_op=Replace(start=node.seq, end=node.seq),
                    source_event_seqs=(record.seq, node.seq),
                ),
                written=text,
            )
        return tuple(node.seq for node in candidates)

    async def _summarise(
        self, agent: Agent, state: _AgentState, turn: int, step: int, shadowed: Sequence[Node]
    ) -> tuple[str | None, tuple[int, ...], LlmFailure | None]:
        config = self.config
        provider, model = self._route(agent)
        provider = config.summary_provider or provider
        model = config.summary_model or model
        shadowed_tokens = sum(node.tokens for node in shadowed)
        max_tokens = min(config.summary_max_tokens, max(32, shadowed_tokens // 2))
        frame = self.meter.message(self._checkpoint("", MessageId(""), ()))
        if (
            not provider
            or not model
            or shadowed_tokens <= frame + max_tokens
            or all(is_checkpoint(node) for node in shadowed if node.tokens)
        ):
            # no route to a summariser yet, a checkpoint could not be smaller, or only a checkpoint to summarise
            return None, (), None
        ids = agent.log.ids
        compaction_id = ids.new_id("compaction")
        start = await agent.append(CompactionStart(data=BracketData(compaction_id=compaction_id, turn=turn)))
        try:
            answer = await self._call(agent, state, turn, step, shadowed, provider, model, max_tokens)
        except BaseException as error:  # the bracket is closed whatever happens; the error goes on
            if isinstance(error, anyio.get_cancelled_exc_class()):
                broken = LlmFailure(message="the summariser call was cancelled", code=FailureCode.ABORTED)
            else:
                broken = LlmFailure(message=f"{type(error).__name__}: {error}", code=FailureCode.UNKNOWN)
            with anyio.CancelScope(shield=True):
                await agent.append(
                    CompactionEnd(data=BracketData(compaction_id=compaction_id, turn=turn, failure=broken))
                )
            raise
        summary = tuple(b for b in answer.blocks if isinstance(b, TextBlock) and b.text.strip())
        checkpoint = self._checkpoint(compaction_id, MessageId(ids.new_id("message")), summary)
        failure = answer.failure
        if failure is None and not summary:
            failure = LlmFailure(message="the summariser answered no text", code=EMPTY_SUMMARY)
        elif failure is None and self.meter.message(checkpoint) >= shadowed_tokens:
            failure = LlmFailure(
                message=f"the checkpoint ({self.meter.message(checkpoint)} tokens) would not be smaller than the "
                f"{shadowed_tokens} tokens of history it replaces",
                code=SUMMARY_TOO_LONG,
            )
        if failure is not None:
            completed = answer.failure is None
            await agent.append(
                CompactionEnd(
                    data=BracketData(
                        compaction_id=compaction_id,
                        turn=turn,
                        failure=failure,
                        llm_stream_call=True,
                        call_key=answer.call,
                        raw_output=answer.blocks if completed else None,
                        usage=answer.usage if completed else None,
                    )
                )
            )
            log.warning("compaction %s of session %s failed: %s", compaction_id, agent.id, failure.message)
            return compaction_id, (), failure
        seqs = tuple(node.seq for node in shadowed)
        record = await agent.append(
            CompactionSummary(
                data=SummaryData(
                    compaction_id=compaction_id,
                    summary=summary,
                    raw_output=answer.blocks,
                    llm_stream_call=True,
                    call_key=answer.call,
                    shadowed_range=ShadowedRange(start=seqs[0], end=seqs[-1]),
                    shadowed_seqs=seqs,
                    shadowed_token_count=shadowed_tokens,
                    provider=provider,
                    model=model,
                    max_tokens=max_tokens,
                    usage=answer.usage,
                )
            )
        )
        await agent.append(
            UserMessageEvent(
                data=checkpoint,
                surface_op=Replace(start=seqs[0], end=seqs[-1]),
                source_event_seqs=(start.seq, record.seq, *seqs),
            )
        )
        # a snapshot the checkpoint shadowed has left the surface: the loop, reading the agent's state, sends the
        # runtime context again, as it would for an agent resumed from this log
        await agent.append(CompactionEnd(data=BracketData(compaction_id=compaction_id, turn=turn)))
        return compaction_id, seqs, None

    @staticmethod
    def _checkpoint(compaction_id: str, id: MessageId, summary: tuple[TextBlock, ...]) -> UserMessage:
        return UserMessage(
            id=id,
            content=(TextBlock(CHECKPOINT_PREAMBLE + _OPEN), *summary, TextBlock(_CLOSE)),
            source=PluginSource(plugin=CHECKPOINT_PLUGIN, compaction_id=compaction_id),
        )

    async def _call(
        self,
        agent: Agent,
        state: _AgentState,
        turn: int,
        step: int,
        shadowed: Sequence[Node],
        provider: str,
        model: str,
        max_tokens: int,
    ) -> _Summary:
        """The summariser call: one `LlmRuntime.stream()` call, its chunks assembled (never logged: the summary
        record holds the complete output, which is all replay needs)."""
        config = self.config
        attempt = state.calls.get((turn, step), 0) + 1
        state.calls[(turn, step)] = attempt
        call = CallKey(turn=turn, step=step, attempt=attempt, purpose=COMPACTION_PURPOSE)
        ratio = state.calibration.ratio if state.calibration is not None else 1.0
        overhead = self.meter.text(config.summary_instructions) + 2 * self.meter.message_tokens + 16
        budget = math.floor(self.window(model, agent) * config.threshold_ratio) - max_tokens - overhead
        text = transcript(
            [node.message for node in shadowed if node.tokens],
            block_chars=config.transcript_block_chars,
            budget_chars=max(2_000, math.floor(budget * config.chars_per_token / max(ratio, 1.0))),
        )
        request = LlmRequest(
            provider=provider,
            model=model,
            system=config.summary_instructions,
            messages=(
                UserMessage(
                    id=MessageId(f"{COMPACTION_PURPOSE}-{turn}-{step}-{attempt}"),
                    content=(TextBlock(f"<transcript>\n{text}\n</transcript>"),),
                ),
            ),
            config=CallConfig(max_tokens=max_tokens, reasoning_effort=config.summary_reasoning_effort),
            session_id=agent.id,
            call=call,
        )
        assembler = await agent.ctx.get(LLM).stream(request).drain()
        finish = assembler.finish
        assert finish is not None, "LlmRuntime ends every stream with a finish chunk"
        if isinstance(finish.reason, FinishError | FinishAborted):
            return _Summary(call, assembler.blocks(), assembler.usage, finish.reason.failure)
        return _Summary(call, assembler.blocks(), assembler.usage, None)

    # ------------------------------------------------------------------ listeners

    async def on_pre_step(self, gate: StepGate, pre: PreStep, next_: Next[StepGate]) -> StepGate:
        """Compact before a step whose request the meter puts past the limit (once the rest of the waterfall lets
        the step run). A failed summariser call leaves the step to run as it is, and pre-step compaction off for
        the rest of the turn."""
        gate = await next_(gate)
        if not isinstance(gate, Proceed):
            return gate
        agent = pre.agent
        state = self._state(agent)
        if state.failed_turn == pre.turn:
            return gate
        _, model = self._route(agent)
        if self.estimate(agent, system=pre.system, tools=pre.tools) <= self.limit(model, agent):
            return gate
        outcome = await self.compact(agent, turn=pre.turn, step=pre.step, system=pre.system, tools=pre.tools)
        if outcome.failure is not None:
            state.failed_turn = pre.turn
        return gate

    async def on_request_error(
        self, decision: ErrorDecision, failed: RequestFailure, next_: Next[ErrorDecision]
    ) -> ErrorDecision:
        """Overflow recovery: a `CONTEXT_WINDOW_EXCEEDED` finish compacts (forced) and retries in the same step,
        at most `overflow_recoveries` times per step, and only when the history shrank; otherwise the decision
        passes on (by default the turn ends with the original failure)."""
        if failed.failure.code != FailureCode.CONTEXT_WINDOW_EXCEEDED:
            return await next_(decision)
        agent = failed.agent
        state = self._state(agent)
        key = (failed.turn, failed.step)
        if state.recoveries.get(key, 0) >= self.config.overflow_recoveries:
            return await next_(decision)
        state.recoveries[key] = state.recoveries.get(key, 0) + 1
        system, tools = _header_parts(agent.header)
        _, model = self._route(agent)
        if self.config.calibrate:
            # the provider refused the request: it held at least the window's tokens
            floor = Calibration(
                self.window(model, agent), self.raw_estimate(agent, system=system, tools=tools)
            )
            if state.calibration is None or floor.ratio > state.calibration.ratio:
                state.calibration = floor
        outcome = await self.compact(
            agent, turn=failed.turn, step=failed.step, system=system, tools=tools, force=True
        )
        if outcome.shrank:
            return Retry()
        return await next_(decision)

    async def on_compact(
        self, done: Compacted | None, request: CompactRequest, next_: Next[Compacted | None]
    ) -> Compacted | None:
        """Compact on request (`/compact`), between turns: prune, then summarise whatever is older than the kept
        tail, whatever the estimate; logged as any compaction (as the next turn's first step would)."""
        done = await next_(done)
        if done is not None:
            return done
        agent = request.agent
        before = sum(node.tokens for node in self.nodes(agent))
        if agent.busy:
            return Compacted(before, before, False, "a turn is running: compact between turns")
        system, tools = _header_parts(agent.header)
        turn = agent.log.state.last_turn + 1
        outcome = await self.compact(agent, turn=turn, step=1, system=system, tools=tools, force=True)
        await agent.log.flush()
        note = None
        if outcome.failure is not None:
            note = f"the summary failed: {outcome.failure.message}"
        elif not outcome.summarised and not outcome.pruned:
            note = "nothing to compact: the history is no longer than the part always kept"
        return Compacted(outcome.before, outcome.after, bool(outcome.summarised), note)

    async def on_event(self, event: AgentEvent) -> None:
        """Calibrate on every response that reports usage: the tokens it was sent against the meter's estimate of
        the request that produced it (the header in force, the surface before it)."""
        stored = event.event
        if stored.type != AssistantMessageEvent.TAG or not self.config.calibrate:
            return
        data = stored.view().data  # the appended event keeps its typed value: no decode
        usage = data.usage if isinstance(data, AssistantMessageData) else None
        agent = event.agent
        nodes = self.nodes(agent)
        if usage is None or not nodes or nodes[-1].seq != stored.seq:
            return
        estimated = self._header_estimate(agent.header, nodes[:-1])
        self._state(agent).calibration = Calibration(_sent(usage), estimated)

    # ------------------------------------------------------------------ per-agent state

    def _state(self, agent: Agent) -> _AgentState:
        state = self._agents.get(agent)
        if state is None:
            state = self._agents[agent] = _AgentState()
            if self.config.calibrate:
                state.calibration = self._stored_calibration(agent)
        return state

    def _stored_calibration(self, agent: Agent) -> Calibration | None:
        """The calibration a live agent would have after the log's newest response with usage, rebuilt from the
        store (an agent resumed or forked from the log measures as the original would have)."""
        store = agent.log.store
        last: tuple[int, TokenUsage] | None = None
        for event in store.events(agent.id, types=(AssistantMessageEvent,)):
            data = event.view().data
            usage = data.usage if isinstance(data, AssistantMessageData) else None
            if usage is not None:
                last = (event.seq, usage)
        if last is None:
            return None
        seq, usage = last
        projection = project(store.events(agent.id, stop=seq, types=PROJECTED_TYPES))
        nodes = [Node.of(m.seq, m.type, m.data, m.view(), self.meter) for m in projection.messages]
        return Calibration(_sent(usage), self._header_estimate(projection.header, nodes))

    def _header_estimate(self, header: EpochHeader | None, nodes: Sequence[Node]) -> int:
        system, tools = _header_parts(header)
        return self.meter.text(system) + self.meter.tools(tools) + sum(node.tokens for node in nodes)

    @staticmethod
    def _route(agent: Agent) -> tuple[str | None, str | None]:
        """The provider and model the agent's calls go to: its options, else its last request header's."""
        header = agent.header
        provider = agent.options.provider or (header.config.provider if header is not None else None)
        model = agent.options.model or (header.config.model if header is not None else None)
        return provider, model


def _logged_window(agent: Agent | None, model: str | None) -> int | None:
    """The window the session's last `request/context` stated, when it names `model` (a context logged for another
    model says nothing about this one)."""
    context = None if agent is None else agent.request_context
    if context is None or model is None or context.model != model:
        return None
    return context.context_window


def _header_parts(header: EpochHeader | None) -> tuple[str, tuple[ToolSchema, ...]]:
    """The system prompt and tool schemas of a `request/header` snapshot (absent when empty; a fixture's
    `{{tools}}` token, or the original's list of tool names, stands for schemas this log does not hold)."""
    if header is None:
        return "", ()
    return header.system or "", header.tool_schemas or ()


def _message(node: SurfaceNode) -> Message:
    """The typed message of a surface node the log's state holds only as written (decoded through the table)."""
    data = decode_data(node.type, node.data, node.seq)
    message: Message = data.message if isinstance(data, AssistantMessageData | ToolResultData) else data
    return message


def _sent(usage: TokenUsage) -> int:
    """The tokens a request was sent with: input plus cache reads (the counts are disjoint)."""
    return usage.input_tokens + (usage.cache_read_tokens or 0)


COMPACTION = ServiceKey[Compaction]("compaction")
