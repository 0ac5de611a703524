"""The wire model of format version 0: the header, one frozen Struct per event type (typed with dsh.runtime.llm's
messages, blocks, chunks, usage and failures), the one tag -> type table every reader decodes through, and
`StoredEvent`, an event exactly as written beside its typed value.

A `StoredEvent` keeps `data` as the JSON text it was written with, so fields dsh does not model (at any depth)
survive import, storage and export; `view()` decodes the typed event once and keeps it, and the log's `append`
hands over the typed event it just encoded, so nothing is decoded again. Decoding is strict where integrity lives
(the envelope, turn and step numbers, messages and their provider and model) and as lenient as the original
elsewhere: unknown fields are accepted, header fields the original defaults are optional, and the older shapes the
original still reads (`assistant/message` with `content` + `provenance`, `tool/result` with `callId` + `content`,
messages without `id` or `role`) are converted on read, never rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar, Literal, get_args

import msgspec

from dsh.runtime.llm import (
    AssistantBlock,
    AssistantMessage,
    CallKey,
    LlmFailure,
    MessageSource,
    StreamChunk,
    TextBlock,
    TokenUsage,
    ToolSchema,
    UserMessage,
)

__all__ = [
    "AbortKind",
    "AbortReason",
    "ApprovalAsked",
    "ApprovalAskedData",
    "ApprovalDecided",
    "ApprovalDecidedData",
    "ApprovalOutcome",
    "ApprovalPolicy",
    "ApprovalPolicyData",
    "AssistantChunk",
    "AssistantChunkData",
    "AssistantMessageEvent",
    "AssistantMessageData",
    "BracketData",
    "CommandDone",
    "CommandDoneData",
    "CommandRun",
    "CommandRunData",
    "CommandSource",
    "CompactionEnd",
    "CompactionPrune",
    "CompactionStart",
    "CompactionSummary",
    "CoreEvent",
    "EVENT_TYPES",
    "EmptyData",
    "EpochHeader",
    "Event",
    "FORMAT_VERSION",
    "HeaderConfig",
    "HeaderReason",
    "HookInvoked",
    "HookInvokedData",
    "HookResult",
    "HookResultData",
    "InboxSpliced",
    "InboxSplicedData",
    "InboxTarget",
    "JobKind",
    "JobSettled",
    "JobSettledData",
    "JobStarted",
    "JobStartedData",
    "LlmRetry",
    "LlmRetryData",
    "LlmRetryStarted",
    "LlmRetryStartedData",
    "OpaqueEvent",
    "PermissionPreset",
    "PermissionPresetData",
    "PruneData",
    "Replace",
    "RequestContext",
    "RequestContextData",
    "RequestHeader",
    "RequestHeaderData",
    "SURFACE_TYPES",
    "SandboxMode",
    "SandboxModeData",
    "SessionEndSeed",
    "SessionHeader",
    "SessionTitle",
    "SessionTitleData",
    "SessionTitleLlmRequest",
    "SessionTitleLlmRequestData",
    "ShadowedRange",
    "StepData",
    "StepEnd",
    "StepStart",
    "StoredEvent",
    "SubagentDescriptor",
    "SubagentDescriptorData",
    "SummaryData",
    "SurfaceOp",
    "Todo",
    "TodoWrite",
    "TitleRoute",
    "TodoWriteData",
    "ToolCall",
    "ToolCallData",
    "ToolResultEvent",
    "ToolResultData",
    "ToolResultError",
    "TurnEnd",
    "TurnEndData",
    "TurnEndKind",
    "TurnEndReason",
    "TurnStart",
    "TurnStartData",
    "UserMessageEvent",
    "core_event_types",
    "data_type",
    "decode_data",
    "encode_data",
    "event_tags",
]

FORMAT_VERSION = 0


class _Wire(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Base of every wire struct: frozen, camelCase on the wire, absent optional fields omitted."""


# ---------------------------------------------------------------- header


class SessionHeader(_Wire, tag="session", tag_field="type", frozen=True, kw_only=True):
    """JSONL line 1: storage metadata, not an event. Required: `version`, `id`, `createdAt`. Optional, with the
    original's defaults: `cwd`, `parentSession`, `seedLength` (absent: 0), `delegationDepth` (absent: 0; the
    original's web app and headless agent do not write it). Keys dsh does not model (`origin`, `agentPreset`, ...)
    are kept beside it as written."""

    version: int
    id: str
    created_at: int
    cwd: str | None = None
    parent_session: str | None = None
    seed_length: int | None = None
    delegation_depth: int = 0


# ---------------------------------------------------------------- surface ops


class Replace(_Wire, tag="replace", tag_field="op", frozen=True, kw_only=True):
    """`{op:"replace", start, end}`: the surface nodes start..end (inclusive, in surface order) are replaced."""

    start: int
    end: int


SurfaceOp = Literal["append"] | Replace
SURFACE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})


# ---------------------------------------------------------------- event data

TurnEndKind = Literal["completed", "aborted", "blocked", "error", "max-tokens", "interrupted"]
"""How a turn ended: `interrupted` is written only by crash repair."""

AbortKind = Literal["user", "parent", "hook", "disposed", "legacy"]
"""Who aborted a turn: the user, a parent agent (cancelling the tool call that runs a subagent), a hook (with its
`reason`), disposal, or an older log that did not say."""

HeaderReason = Literal["initial", "resume", "change"]


class TurnStartData(_Wire, frozen=True, kw_only=True):
    turn: int


class AbortReason(_Wire, frozen=True, kw_only=True):
    """Who aborted a turn; a `hook` names its `reason`."""

    kind: AbortKind
    reason: str | None = None


class TurnEndReason(_Wire, frozen=True, kw_only=True):
    """`completed`, `max-tokens`, `interrupted`, `blocked{message}`, `aborted{reason}`, `error{error}`."""

    kind: TurnEndKind
    error: LlmFailure | None = None
    reason: AbortReason | None = None
    message: str | None = None


class TurnEndData(_Wire, frozen=True, kw_only=True):
    turn: int
    reason: TurnEndReason


class StepData(_Wire, frozen=True, kw_only=True):
    turn: int
    step: int


class AssistantChunkData(_Wire, frozen=True, kw_only=True):
    turn: int
    step: int
    chunk: StreamChunk


class AssistantMessageData(_Wire, frozen=True, kw_only=True):
    turn: int
    step: int
    message: AssistantMessage
    usage: TokenUsage | None = None
    interrupted: bool | None = None


class ToolCallData(_Wire, frozen=True, kw_only=True):
    turn: int
    step: int
    call_id: str
    name: str
    arguments: str


class ToolResultError(_Wire, frozen=True, kw_only=True):
    name: str
    code: str


class ToolResultData(_Wire, frozen=True, kw_only=True):
    turn: int
    step: int
    message: UserMessage
    error: ToolResultError | None = None
    meta: Any = None


class Todo(_Wire, frozen=True, kw_only=True):
    content: str
    status: str


class TodoWriteData(_Wire, frozen=True, kw_only=True):
    todos: tuple[Todo, ...]


JobKind = Literal["stream", "final-output"]
"""A background job's kind: `stream` (output read as it comes: bash) or `final-output` (one result once it
settles: a subagent)."""


class JobStartedData(_Wire, frozen=True, kw_only=True):
    """A background job the agent started: its id, kind, the tool and call that started it, and a label (the
    command, or the task's description)."""

    job_id: str
    kind: JobKind
    tool: str
    call_id: str | None = None
    turn: int = 0
    step: int = 0
    label: str | None = None


class JobSettledData(_Wire, frozen=True, kw_only=True):
    """How a background job ended: `completed` (with the exit code of a command), `killed` (with why) or `failed`
    (with the error)."""

    job_id: str
    status: Literal["completed", "killed", "failed"]
    exit_code: int | None = None
    error: str | None = None
    reason: str | None = None


class HeaderConfig(_Wire, frozen=True, kw_only=True):
    """`request/header` config: provider and model, then the call config's set fields."""

    provider: str
    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    stop: tuple[str, ...] | None = None


class EpochHeader(_Wire, frozen=True, kw_only=True):
    """Everything of a request except its messages; an empty system prompt or tool list is omitted. A committed
    fixture holds the tokens `"{{system}}"` and `"{{tools}}"` instead (spec §3.8), hence `tools` may be text; the
    original's snapshot form lists the tools by name only, hence a list item may be a name (`tool_schemas` says
    whether the header holds the schemas themselves)."""

    config: HeaderConfig
    adapter_defaults: Any = None
    system: str | None = None
    tools: tuple[ToolSchema | str, ...] | str | None = None

    @property
    def tool_schemas(self) -> tuple[ToolSchema, ...] | None:
        """The tools as sent, when this header holds them all as schemas; None for a token or a list of names."""
        tools = self.tools
        if not isinstance(tools, tuple) or not all(isinstance(tool, ToolSchema) for tool in tools):
            return None
        return tools  # type: ignore[return-value]  # every item was checked to be a ToolSchema


class RequestHeaderData(_Wire, frozen=True, kw_only=True):
    header: EpochHeader
    reason: HeaderReason


class RequestContextData(_Wire, frozen=True, kw_only=True):
    """What a step's request went to: provider, model and, when the provider's adapter states it, the model's
    context window in tokens (absent when unknown)."""

    provider: str
    model: str
    context_window: int | None = None


class EmptyData(_Wire, frozen=True, kw_only=True):
    """`{}` (`session/end-seed`)."""


class ShadowedRange(_Wire, frozen=True, kw_only=True):
    """The first and last surface node a compaction shadowed (`shadowedSeqs` is authoritative)."""

    start: int
    end: int


class BracketData(_Wire, frozen=True, kw_only=True):
    """`compaction/start` and `compaction/end`: `{compactionId, turn}`. An `end` whose summariser call failed adds
    `failure`, and `llmStreamCall` when a model call was made (`rawOutput`/`usage` when that call completed but its
    output could not be used), with the call's `callKey`. Log-only plugin records: every field is optional, as the
    original's reader treats them (replay reads only the call marker and key, the raw output, the usage and the
    failure)."""

    compaction_id: str | None = None
    turn: int | None = None
    failure: LlmFailure | None = None
    llm_stream_call: bool | None = None
    call_key: CallKey | None = None
    raw_output: tuple[AssistantBlock, ...] | None = None
    usage: TokenUsage | None = None


class SummaryData(_Wire, frozen=True, kw_only=True):
    """`compaction/summary`: the summary, the summariser's complete output (`llmStreamCall`: one `LlmRuntime.stream()`
    call produced `rawOutput`, and replay serves it under `callKey`, the `CallKey` it was made with), the shadowed
    nodes, their estimated token count and the call's provider, model, `maxTokens` and usage. Every field is optional
    (see `BracketData`; logs from before `callKey` leave replay to derive it); dsh.plugins.compaction writes them all."""

    compaction_id: str | None = None
    summary: tuple[TextBlock, ...] | None = None
    raw_output: tuple[AssistantBlock, ...] | None = None
    llm_stream_call: bool | None = None
    call_key: CallKey | None = None
    shadowed_range: ShadowedRange | None = None
    shadowed_seqs: tuple[int, ...] | None = None
    shadowed_token_count: int | None = None
    provider: str | None = None
    model: str | None = None
    max_tokens: int | None = None
    usage: TokenUsage | None = None


class PruneData(_Wire, frozen=True, kw_only=True):
    """`compaction/prune`: the `tool/result` nodes whose content the following replacements prune (every field
    optional, see `BracketData`)."""

    compaction_id: str | None = None
    turn: int | None = None
    shadowed_seqs: tuple[int, ...] | None = None
    shadowed_token_count: int | None = None


class LlmRetryData(_Wire, frozen=True, kw_only=True):
    """`llm/retry`: retry number `retry` of (`turn`, `step`) was decided, after waiting `delay_ms`."""

    retry_id: str
    turn: int
    step: int
    provider: str
    mode: str
    policy_key: str
    retry: int
    max_retries: int | None = None
    delay_ms: int
    failure: LlmFailure


class LlmRetryStartedData(_Wire, frozen=True, kw_only=True):
    """`llm/retry-started`: the wait of retry `retry_id` is over; its attempt starts now."""

    retry_id: str
    turn: int
    step: int
    retry: int


class SubagentDescriptorData(_Wire, frozen=True, kw_only=True):
    version: int
    mode: str
    provider: str
    label: str | None = None


InboxTarget = Literal["next-turn", "next-step"]
"""Which queue of an agent's inbox: `next-turn` (a prompt: it starts the next turn) or `next-step` (steering: it
enters the running turn at its next step)."""


class InboxSplicedData(_Wire, frozen=True, kw_only=True):
    """`agent/inbox/spliced`: one mutation of queue `target`: `removed_count` items from `start` replaced by
    `inserted` (a queued input appends at the end; a claim removes from the front)."""

    target: InboxTarget
    start: int
    inserted: tuple[UserMessage, ...]
    removed_count: int | None = None


class SessionTitleData(_Wire, frozen=True, kw_only=True):
    """`session/title`: the title, the `user/message` seqs it was made from, and how (`source`, as the original
    writes it: `{kind: "fallback"}`, `{kind: "user"}` for one set by hand, `{kind: "provider", provider, model?}` for
    one a model made). `usage` is dsh's: the tokens of the model call that made it."""

    title: str
    message_seqs: tuple[int, ...] = ()
    source: Any = None
    usage: TokenUsage | None = None


class TitleRoute(_Wire, frozen=True, kw_only=True):
    """Where a title call goes: provider route and model."""

    provider: str
    model: str


class SessionTitleLlmRequestData(_Wire, frozen=True, kw_only=True):
    """`session/title-llm-request`, logged before a title call: the title provider's id, the `user/message` seqs it
    frames, the call's route, its exact system prompt and messages, and its output cap (the original's fields)."""

    title_provider: str
    message_seqs: tuple[int, ...]
    route: TitleRoute
    system: str
    messages: tuple[UserMessage, ...]
    max_tokens: int


# ---------------------------------------------------------------- human in the loop (the original's interaction/*,
# sandbox/* and hooks/* packages; fields exactly as it writes them)

ApprovalOutcome = Literal["allowed-once", "allowed-always", "rejected", "cancelled", "unavailable"]
"""How an approval was decided: `allowed-once` (this call), `allowed-always` (this call and every later call of the
same tool in the session), `rejected` (by a person, or by the `never` policy), `cancelled` (the turn was cancelled
while it waited), `unavailable` (no answerer could be asked)."""


class ApprovalPolicyData(_Wire, frozen=True, kw_only=True):
    """`approval/policy`: the session's approval policy from here on (`ask`, `never`, `auto-allow`)."""

    policy: str
    source: str | None = None


class ApprovalAskedData(_Wire, frozen=True, kw_only=True):
    """`approval/asked`: call `call_id` of tool `tool_name` needs approval, for `reason`; `id` pairs it with its
    `approval/decided`."""

    id: str
    tool_name: str
    call_id: str | None = None
    reason: str | None = None


class ApprovalDecidedData(_Wire, frozen=True, kw_only=True):
    """`approval/decided`: the outcome of approval `id`, with the person's message to the model, if any."""

    id: str
    outcome: str
    message: str | None = None


class PermissionPresetData(_Wire, frozen=True, kw_only=True):
    """`permission/preset`: the preset the user selected (its `sandbox/mode` and `approval/policy` follow)."""

    preset: str


class SandboxModeData(_Wire, frozen=True, kw_only=True):
    """`sandbox/mode`: the session's sandbox mode from here on (`read-only`, `workspace-write`,
    `danger-full-access`)."""

    mode: str


class CommandSource(_Wire, frozen=True, kw_only=True):
    """Who ran a slash command (`{kind: "user"}`)."""

    kind: str


class CommandRunData(_Wire, frozen=True, kw_only=True):
    """`command/run`: slash command `name` run with `args` (the raw text after the name, as typed)."""

    command_id: str
    name: str
    args: str = ""
    source: CommandSource | None = None


class CommandDoneData(_Wire, frozen=True, kw_only=True):
    """`command/done`: how command `command_id` ended (`success` or `error`) and what it told the user."""

    command_id: str
    kind: str
    text: str | None = None


class HookInvokedData(_Wire, frozen=True, kw_only=True):
    """`hook/invoked`: hook `handler_id` of `dialect` (`claude-code`, `codex`) runs at `point` in `turn`, selected by
    `matcher` (absent: a match-all group)."""

    turn: int
    point: str
    dialect: str
    handler_id: str
    matcher: str | None = None


class HookResultData(_Wire, frozen=True, kw_only=True):
    """`hook/result`: what hook `handler_id` decided (`block`, `deny`, `ask`, `allow`, `approve`, `stop` or `pass`),
    its exit code (absent: it did not exit by itself), its stderr trimmed and capped, and how long it ran."""

    turn: int
    point: str
    handler_id: str
    decision: str
    exit_code: int | None = None
    stderr_summary: str | None = None
    duration_ms: float


# ---------------------------------------------------------------- typed events (envelope + data)


class Event(_Wire, tag_field="type", frozen=True, kw_only=True):
    """A typed event: the envelope and a typed `data`. `seq`/`time` are -1 until the log assigns them. Each event
    type's `TAG` is its wire tag (`TurnEnd.TAG == "turn/end"`), read from its declaration by `EVENT_TYPES`: code
    outside this module names a type by its class, or by `TAG` where it needs the string."""

    TAG: ClassVar[str]

    seq: int = -1
    time: int = -1
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool | None = None
    data: Any


class TurnStart(Event, tag="turn/start", frozen=True, kw_only=True):
    data: TurnStartData


class TurnEnd(Event, tag="turn/end", frozen=True, kw_only=True):
    data: TurnEndData


class StepStart(Event, tag="step/start", frozen=True, kw_only=True):
    data: StepData


class StepEnd(Event, tag="step/end", frozen=True, kw_only=True):
    data: StepData


class UserMessageEvent(Event, tag="user/message", frozen=True, kw_only=True):
    """`user/message`: the prompt, injected context (a runtime-context snapshot) or a compaction checkpoint."""

    data: UserMessage


class AssistantChunk(Event, tag="assistant/chunk", frozen=True, kw_only=True):
    data: AssistantChunkData


class AssistantMessageEvent(Event, tag="assistant/message", frozen=True, kw_only=True):
    """`assistant/message`: what a model said in one call (interrupted: the visible part of a cut stream)."""

    data: AssistantMessageData


class ToolCall(Event, tag="tool/call", frozen=True, kw_only=True):
    data: ToolCallData


class ToolResultEvent(Event, tag="tool/result", frozen=True, kw_only=True):
    data: ToolResultData


class RequestHeader(Event, tag="request/header", frozen=True, kw_only=True):
    data: RequestHeaderData


class RequestContext(Event, tag="request/context", frozen=True, kw_only=True):
    data: RequestContextData


class SessionEndSeed(Event, tag="session/end-seed", frozen=True, kw_only=True):
    data: EmptyData


class TodoWrite(Event, tag="todo/write", frozen=True, kw_only=True):
    data: TodoWriteData


class CompactionStart(Event, tag="compaction/start", frozen=True, kw_only=True):
    data: BracketData


class CompactionSummary(Event, tag="compaction/summary", frozen=True, kw_only=True):
    data: SummaryData


class CompactionEnd(Event, tag="compaction/end", frozen=True, kw_only=True):
    data: BracketData


class CompactionPrune(Event, tag="compaction/prune", frozen=True, kw_only=True):
    data: PruneData


class LlmRetry(Event, tag="llm/retry", frozen=True, kw_only=True):
    data: LlmRetryData


class LlmRetryStarted(Event, tag="llm/retry-started", frozen=True, kw_only=True):
    data: LlmRetryStartedData


class SubagentDescriptor(Event, tag="subagent/descriptor", frozen=True, kw_only=True):
    data: SubagentDescriptorData


class SessionTitle(Event, tag="session/title", frozen=True, kw_only=True):
    data: SessionTitleData


class SessionTitleLlmRequest(Event, tag="session/title-llm-request", frozen=True, kw_only=True):
    """A title call about to be made (its result, if any, is the next `session/title`)."""

    data: SessionTitleLlmRequestData


class JobStarted(Event, tag="job/started", frozen=True, kw_only=True):
    data: JobStartedData


class JobSettled(Event, tag="job/settled", frozen=True, kw_only=True):
    """Logged when the agent is told (with the settlement notice, where the inbox admits it), or, for a job killed
    because its agent closed, as the agent closes."""

    data: JobSettledData


class InboxSpliced(Event, tag="agent/inbox/spliced", frozen=True, kw_only=True):
    """A queue mutation of the agent's inbox: logged when input is queued and when a turn claims it."""

    data: InboxSplicedData


class ApprovalPolicy(Event, tag="approval/policy", frozen=True, kw_only=True):
    data: ApprovalPolicyData


class ApprovalAsked(Event, tag="approval/asked", frozen=True, kw_only=True):
    data: ApprovalAskedData


class ApprovalDecided(Event, tag="approval/decided", frozen=True, kw_only=True):
    data: ApprovalDecidedData


class PermissionPreset(Event, tag="permission/preset", frozen=True, kw_only=True):
    data: PermissionPresetData


class SandboxMode(Event, tag="sandbox/mode", frozen=True, kw_only=True):
    data: SandboxModeData


class CommandRun(Event, tag="command/run", frozen=True, kw_only=True):
    data: CommandRunData


class CommandDone(Event, tag="command/done", frozen=True, kw_only=True):
    data: CommandDoneData


class HookInvoked(Event, tag="hook/invoked", frozen=True, kw_only=True):
    data: HookInvokedData


class HookResult(Event, tag="hook/result", frozen=True, kw_only=True):
    data: HookResultData


class OpaqueEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event of a type dsh does not know: kept verbatim, never projected."""

    type: str
    seq: int
    time: int
    data: Any
    ignorable: bool | None = None


CoreEvent = (
    TurnStart
    | TurnEnd
    | StepStart
    | StepEnd
    | UserMessageEvent
    | AssistantChunk
    | AssistantMessageEvent
    | ToolCall
    | ToolResultEvent
    | RequestHeader
    | RequestContext
    | SessionEndSeed
    | TodoWrite
    | CompactionStart
    | CompactionSummary
    | CompactionEnd
    | CompactionPrune
    | LlmRetry
    | LlmRetryStarted
    | SubagentDescriptor
    | SessionTitle
    | SessionTitleLlmRequest
    | InboxSpliced
    | JobStarted
    | JobSettled
    | ApprovalPolicy
    | ApprovalAsked
    | ApprovalDecided
    | PermissionPreset
    | SandboxMode
    | CommandRun
    | CommandDone
    | HookInvoked
    | HookResult
)

EVENT_TYPES: Mapping[str, type[Event]] = {str(cls.__struct_config__.tag): cls for cls in get_args(CoreEvent)}
"""The one tag -> type table: every reader of the log (store, JSONL, rules, projection, replay, CLI, plugins)
decodes through it. Read from `CoreEvent`: a new event type is its Struct, declared above, and its place in that union
(tests/test_wire_tags.py fails on an `Event` subclass missing from it, and on a tag written out elsewhere)."""

_TAGS: dict[type[Event], str] = {cls: tag for tag, cls in EVENT_TYPES.items()}
for _cls, _tag in _TAGS.items():
    _cls.TAG = _tag
del _cls, _tag


def event_tags(kinds: Collection[str | type[Event]] | None) -> tuple[str, ...] | None:
    """The wire tags of `kinds`, each an event class (`TurnEnd`) or a tag (an opaque type's, `"goal/set"`), in
    order; None stays None (a store's "no filter")."""
    if kinds is None:
        return None
    tags: list[str] = []
    for kind in kinds:
        if isinstance(kind, str):
            tags.append(kind)
            continue
        tag = _TAGS.get(kind)
        if tag is None:
            raise TypeError(
                f"{kind!r} is not an event type: pass a class of EVENT_TYPES (TurnEnd, ...) or a wire tag string"
            )
        tags.append(tag)
    return tuple(tags)


_DATA_TYPES: dict[str, type[msgspec.Struct]] = {
    tag: next(f.type for f in msgspec.structs.fields(cls) if f.name == "data")
    for tag, cls in EVENT_TYPES.items()
}
_DATA_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    tag: msgspec.json.Decoder(data) for tag, data in _DATA_TYPES.items()
}
_ANY_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder()


def core_event_types() -> frozenset[str]:
    """The wire tags of every core event type."""
    return frozenset(EVENT_TYPES)


def data_type(event_type: str) -> type[msgspec.Struct] | None:
    """The typed `data` Struct of a core event type, or None for a type dsh does not know."""
    return _DATA_TYPES.get(event_type)


def encode_data(data: Any) -> str:
    """Compact JSON text of an event's data."""
    return _ENCODER.encode(data).decode()


# ---------------------------------------------------------------- older shapes, converted on read


def _message_id(data: dict[str, Any], seq: int) -> None:
    if "id" not in data:
        data["id"] = f"seq-{seq}"  # an older log's message has no id: the event's seq names it, stably


_SOURCE_KINDS = frozenset(str(cls.__struct_config__.tag) for cls in get_args(MessageSource))


def _source_kind(message: dict[str, Any]) -> None:
    source = message.get("source")
    if (
        isinstance(source, dict)
        and isinstance(source.get("kind"), str)
        and source["kind"] not in _SOURCE_KINDS
    ):
        message["source"] = {"kind": "other", "name": source["kind"]}  # a kind a plugin of the original adds


def _upgrade_user(data: dict[str, Any], seq: int) -> dict[str, Any]:
    _message_id(data, seq)
    _source_kind(data)
    return data


def _upgrade_assistant(data: dict[str, Any], seq: int) -> dict[str, Any]:
    message = data.get("message")
    if isinstance(message, dict):
        _message_id(message, seq)
        return data
    if "content" not in data or not isinstance(data.get("provenance"), dict):
        return data
    provenance = data.pop("provenance")
    message = {"role": "assistant", "content": data.pop("content"), "source": {**provenance, "kind": "model"}}
    _message_id(message, seq)
    return {**data, "message": message}


def _upgrade_tool_result(data: dict[str, Any], seq: int) -> dict[str, Any]:
    message = data.get("message")
    if isinstance(message, dict):
        _message_id(message, seq)
        return data
    if "callId" not in data or "content" not in data:
        return data
    call_id = data.pop("callId")
    block = {"type": "tool-result", "toolCallId": call_id, "content": data.pop("content")}
    if "isError" in data:
        block["isError"] = data.pop("isError")
    message = {"role": "user", "content": [block], "source": {"kind": "tool", "callId": call_id}}
    _message_id(message, seq)
    return {**data, "message": message}


def _upgrade_spliced(data: dict[str, Any], seq: int) -> dict[str, Any]:
    inserted = data.get("inserted")
    if isinstance(inserted, list):
        for item in inserted:
            if isinstance(item, dict):
                _message_id(item, seq)
                _source_kind(item)
                item.setdefault("role", "user")
    return data


_UPGRADES: dict[str, Callable[[dict[str, Any], int], dict[str, Any]]] = {
    "agent/inbox/spliced": _upgrade_spliced,
    "user/message": _upgrade_user,
    "assistant/message": _upgrade_assistant,
    "tool/result": _upgrade_tool_result,
}


def decode_data(event_type: str, data: str | bytes, seq: int = -1) -> Any:
    """The typed data of a core event (its Struct), or plain JSON values for an unknown type. An older shape the
    original still reads is converted first. Raises `msgspec.DecodeError` (what and where) for bad data."""
    decoder = _DATA_DECODERS.get(event_type)
    if decoder is None:
        return _ANY_DECODER.decode(data)
    try:
        return decoder.decode(data)
    except msgspec.ValidationError:
        upgrade = _UPGRADES.get(event_type)
        raw = _ANY_DECODER.decode(data) if upgrade is not None else None
        if upgrade is None or not isinstance(raw, dict):
            raise
        upgraded = upgrade(raw, seq)
        if upgraded == _ANY_DECODER.decode(data):
            raise
        return msgspec.convert(upgraded, _DATA_TYPES[event_type], from_attributes=False)


# ---------------------------------------------------------------- the stored event


class StoredEvent(msgspec.Struct, kw_only=True, gc=False):
    """One event exactly as logged: `data` and `extra` (envelope keys dsh does not model) are JSON text as written,
    and `view()` is its typed value, decoded on first use and kept (an appended event carries the typed event it
    was encoded from, so it is never decoded).

    Equality compares what was written (type, envelope and JSON text), never the kept typed value. Treat it as
    immutable: the kept view is the only thing ever set after construction."""

    type: str
    seq: int
    time: int
    data: str
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool | None = None
    extra: str | None = None
    typed: CoreEvent | OpaqueEvent | None = None

    __hash__ = None  # type: ignore[assignment]  # equality is by value, and the kept view is set lazily

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StoredEvent):
            return NotImplemented
        return (
            self.seq == other.seq
            and self.type == other.type
            and self.time == other.time
            and self.data == other.data
            and self.surface_op == other.surface_op
            and self.source_event_seqs == other.source_event_seqs
            and self.ignorable == other.ignorable
            and self.extra == other.extra
        )

    @property
    def is_core(self) -> bool:
        return self.type in EVENT_TYPES

    def decode_data(self) -> Any:
        """The typed data of a core event (a Struct), or plain JSON values for an unknown type."""
        return self.view().data

    def view(self) -> CoreEvent | OpaqueEvent:
        """The typed, frozen event (decoded once, then kept). Raises `msgspec.DecodeError` for bad data."""
        typed = self.typed
        if typed is not None:
            if typed.seq != self.seq and isinstance(typed, Event):  # handed over by an append: stamp it once
                typed = self.typed = msgspec.structs.replace(typed, seq=self.seq, time=self.time)
            return typed
        cls = EVENT_TYPES.get(self.type)
        if cls is None:
            typed = OpaqueEvent(
                type=self.type,
                seq=self.seq,
                time=self.time,
                data=_ANY_DECODER.decode(self.data),
                ignorable=self.ignorable,
            )
        else:
            typed = cls(  # type: ignore[assignment]  # EVENT_TYPES holds exactly the CoreEvent classes
                seq=self.seq,
                time=self.time,
                data=decode_data(self.type, self.data, self.seq),
                surface_op=self.surface_op,
                source_event_seqs=self.source_event_seqs,
                ignorable=self.ignorable,
            )
        self.typed = typed
        return typed  # type: ignore[return-value]  # set just above

    @classmethod
    def from_event(cls, event: Event, *, seq: int, time: int, data: str | None = None) -> StoredEvent:
        """The stored form of a typed event, with the seq and time the log assigned (`data`: its data's JSON text
        when the writer has it as written, else encoded here). The typed event is kept with it (its seq and time
        are stamped on the first `view()`, so an append that nobody reads back costs no copy)."""
        return cls(
            type=_TAGS[type(event)],
            seq=seq,
            time=time,
            data=encode_data(event.data) if data is None else data,
            surface_op=event.surface_op,
            source_event_seqs=event.source_event_seqs,
            ignorable=event.ignorable,
            typed=event,  # type: ignore[arg-type]  # every Event subclass in use is a CoreEvent; stamped on view()
        )
