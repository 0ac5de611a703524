"""The agent loop's events, declared once here with their payloads: `agent/pre-step`, `agent/step-input`,
`agent/step-results`, `agent/request`, `agent/request-error`, `agent/error`, `agent/event` (every event an agent
appends, for clients), `agent/prompt-submit` (a user's prompt entering a turn), `agent/turn-stopping` (a turn about
to end), `agent/session-start` and `agent/session-end` (an agent opened and closing), the slash commands and
compaction on request."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dsh.runtime.kernel import Emit, Waterfall
from dsh.runtime.llm import CallConfig, LlmFailure, Message, PluginSource, ToolSchema, UserMessage
from dsh.runtime.session import StoredEvent

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = [
    "ERROR",
    "EVENT",
    "PRE_STEP",
    "PROMPT_SUBMIT",
    "SLASH_COMMAND",
    "CommandReply",
    "SlashCommand",
    "TURN_STOPPING",
    "SESSION_END",
    "SESSION_START",
    "SessionClosing",
    "SessionOpened",
    "AddContext",
    "BlockPrompt",
    "PromptDecision",
    "PromptSubmit",
    "TurnStopping",
    "REQUEST",
    "REQUEST_ERROR",
    "AgentError",
    "AgentEvent",
    "COMPACT",
    "CompactRequest",
    "Compacted",
    "Block",
    "ErrorDecision",
    "Fail",
    "PreStep",
    "Proceed",
    "RequestConfig",
    "STEP_INPUT",
    "STEP_PREVIEW",
    "STEP_RESULTS",
    "StepInput",
    "StepPreview",
    "StepResults",
    "RequestFailure",
    "RequestInfo",
    "Retry",
    "StepGate",
]


@dataclass(frozen=True)
class PreStep:
    """Before a step's request exists: the exact system prompt (`system`) and tool schemas (`tools`) it will carry,
    and the messages the log projects now. A listener that changes history (compaction) appends to the agent's
    log; the loop projects the messages again after the waterfall."""

    agent: Agent
    turn: int
    step: int
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()


@dataclass(frozen=True)
class Proceed:
    """Run the step (the default)."""


@dataclass(frozen=True)
class Block:
    """Do not run the step: the turn ends `blocked` with `reason`."""

    reason: str


StepGate = Proceed | Block

PRE_STEP = Waterfall[StepGate, PreStep]("agent/pre-step")
"""`listener(gate, pre_step, next_) -> StepGate`. Runs once per step, after render, before `step/start`."""


@dataclass(frozen=True)
class StepInput:
    """A step about to start: `claimed` is the input it took from the agent's inbox (the prompt, steering, queued
    notices), in the order it enters."""

    agent: Agent
    turn: int
    step: int
    claimed: tuple[UserMessage, ...]


STEP_INPUT = Waterfall[tuple[UserMessage, ...], StepInput]("agent/step-input")
"""`listener(added, step_input, next_) -> added`: messages a plugin adds to the step (workspace instructions). They
enter after the claimed input, right after `step/start`, in the order returned; each is logged as `user/message`.
Runs once per step, after `agent/pre-step` let the step run."""


@dataclass(frozen=True)
class StepResults:
    """A step's tool calls have all been answered (their `tool/result`s are logged); the step has not ended."""

    agent: Agent
    turn: int
    step: int


STEP_RESULTS = Waterfall[tuple[UserMessage, ...], StepResults]("agent/step-results")
"""`listener(added, step_results, next_) -> added`: messages a plugin adds after a step's tool results (a
repeat-call reminder), each logged as `user/message` before `step/end`; the model reads them in the next step."""


@dataclass(frozen=True)
class StepPreview:
    """What a step would be sent, asked without running it (`dsh prompt`, chat's `/prompt`): the working directory
    and the conversation so far (empty: a new session)."""

    cwd: Path | None
    messages: tuple[Message, ...] = ()


STEP_PREVIEW = Waterfall[tuple[UserMessage, ...], StepPreview]("agent/step-preview")
"""`listener(added, preview, next_) -> added`: the messages a plugin would add to the next step (as on
`agent/step-input`), computed without remembering anything or logging."""


@dataclass(frozen=True)
class CompactRequest:
    """Someone asked to compact `agent`'s history now (chat's `/compact`, ACP's `/compact`), between turns."""

    agent: Agent


@dataclass(frozen=True)
class Compacted:
    """What a compaction asked for did: the history's estimated tokens before and after, whether a summary
    replaced older messages, and, when nothing could be done or the summariser failed, why (`note`)."""

    before: int
    after: int
    summarised: bool
    note: str | None = None


COMPACT = Waterfall[Compacted | None, CompactRequest]("agent/compact")
"""`listener(done, request, next_) -> done`: the deployment's compaction answers (None: nothing compacts)."""


@dataclass(frozen=True)
class RequestInfo:
    """Which call the `agent/request` waterfall configures."""

    agent: Agent
    turn: int
    step: int


@dataclass(frozen=True)
class RequestConfig:
    """The call configuration a step's request is sent with. `provider` and `model` start from `AgentOptions`;
    a listener may supply or switch them (and then also states `model` in `system-prompt/assemble`, spec §2.3)."""

    provider: str | None
    model: str | None
    config: CallConfig = field(default_factory=CallConfig)


REQUEST = Waterfall[RequestConfig, RequestInfo]("agent/request")
"""`listener(config, info, next_) -> RequestConfig`: the call config only, never prompt text."""


@dataclass(frozen=True)
class RequestFailure:
    """A model call of (`turn`, `step`) ended in an error finish on attempt `attempt`."""

    agent: Agent
    turn: int
    step: int
    attempt: int
    provider: str
    failure: LlmFailure


@dataclass(frozen=True)
class Fail:
    """End the turn with the failure (the default)."""


@dataclass(frozen=True)
class Retry:
    """Call again in the same step, as attempt + 1. The listener that answers it has already waited its delay."""


ErrorDecision = Fail | Retry

REQUEST_ERROR = Waterfall[ErrorDecision, RequestFailure]("agent/request-error")
"""`listener(decision, failure, next_) -> ErrorDecision`: the retry policy and overflow recovery live here."""


@dataclass(frozen=True)
class AgentError:
    """A turn ended in error: emitted once per such turn with the original error (an `LlmCallError` for a model
    failure). `step` is None when no step was open."""

    agent: Agent
    turn: int
    step: int | None
    error: BaseException


ERROR = Emit[AgentError]("agent/error")


@dataclass(frozen=True)
class AgentEvent:
    """An event `agent` appended to its log (not yet durable: the loop flushes at its own barriers)."""

    agent: Agent
    event: StoredEvent


EVENT = Emit[AgentEvent]("agent/event")
"""Every event an agent appends, in seq order: what terminal and ACP clients render. Listeners must be quick."""


@dataclass(frozen=True)
class PromptSubmit:
    """A user's prompt entering turn `turn` (its text blocks joined)."""

    agent: Agent
    turn: int
    text: str


@dataclass(frozen=True)
class AddContext:
    """Let the prompt in, with `texts` added after it as one message from `source` (none: nothing added)."""

    texts: tuple[str, ...] = ()
    source: PluginSource | None = None


@dataclass(frozen=True)
class BlockPrompt:
    """Keep the prompt out: the turn ends `blocked` with `reason` before any step runs."""

    reason: str


PromptDecision = AddContext | BlockPrompt

PROMPT_SUBMIT = Waterfall[PromptDecision, PromptSubmit]("agent/prompt-submit")
"""When a turn's first step takes in a user's prompt, before the step starts: the value starts `AddContext()`."""


@dataclass(frozen=True)
class TurnStopping:
    """Turn `turn` is about to end after step `step` (the model called no tool). A listener that queues steering for
    the agent (`agent.queue(..., target="next-step", inline=True)`) makes it run another step instead."""

    agent: Agent
    turn: int
    step: int


TURN_STOPPING = Emit[TurnStopping]("agent/turn-stopping")
"""After the last step's `step/end`, before the turn decides to end (a Stop hook runs here)."""


@dataclass(frozen=True)
class SessionOpened:
    """`agent` was opened: `source` says how, `startup` (a new session; a subagent's, when `agent.parent` is set),
    `resume` (a stored session continued) or `fork` (a new session inheriting another's turns)."""

    agent: Agent
    source: str


SESSION_START = Emit[SessionOpened]("agent/session-start")
"""When an agent opens, before any turn of it can start (SessionStart and SubagentStart hooks run here)."""


@dataclass(frozen=True)
class SessionClosing:
    """`agent` is being closed by its owner, its turns over (not when it is torn down by a failure or cancel)."""

    agent: Agent


SESSION_END = Emit[SessionClosing]("agent/session-end")
"""When an agent's owner closes it normally, before its log closes (a SubagentStop hook runs here)."""


@dataclass(frozen=True)
class SlashCommand:
    """A slash command a person typed for `agent` between its turns: `/name` followed by `args` (the raw rest of
    the line, as typed)."""

    agent: Agent
    name: str
    args: str


@dataclass(frozen=True)
class CommandReply:
    """How a slash command ended (`success` or `error`) and what it tells the person."""

    kind: str
    text: str


SLASH_COMMAND = Waterfall["CommandReply | None", SlashCommand]("agent/command")
"""A slash command a surface does not handle itself: the plugin that owns the name returns its reply (and logs
`command/run`/`command/done`), others call next; None from the whole chain: no plugin knows the command."""
