"""The agent loop: agents over the session log, their options, their state (`AgentState`, the fold of their own log),
the turn, the loop's events and the `agent` plugin (README.md)."""

from ._agent import Agent as Agent
from ._agent import AgentOptions as AgentOptions
from ._agent import InboxInput as InboxInput
from ._events import COMPACT as COMPACT
from ._events import ERROR as ERROR
from ._events import EVENT as EVENT
from ._events import PRE_STEP as PRE_STEP
from ._events import PROMPT_SUBMIT as PROMPT_SUBMIT
from ._events import REQUEST as REQUEST
from ._events import REQUEST_ERROR as REQUEST_ERROR
from ._events import SESSION_END as SESSION_END
from ._events import SESSION_START as SESSION_START
from ._events import SLASH_COMMAND as SLASH_COMMAND
from ._events import STEP_INPUT as STEP_INPUT
from ._events import STEP_PREVIEW as STEP_PREVIEW
from ._events import STEP_RESULTS as STEP_RESULTS
from ._events import TURN_STOPPING as TURN_STOPPING
from ._events import AddContext as AddContext
from ._events import AgentError as AgentError
from ._events import AgentEvent as AgentEvent
from ._events import Block as Block
from ._events import BlockPrompt as BlockPrompt
from ._events import CommandReply as CommandReply
from ._events import Compacted as Compacted
from ._events import CompactRequest as CompactRequest
from ._events import ErrorDecision as ErrorDecision
from ._events import Fail as Fail
from ._events import PreStep as PreStep
from ._events import Proceed as Proceed
from ._events import PromptDecision as PromptDecision
from ._events import PromptSubmit as PromptSubmit
from ._events import RequestConfig as RequestConfig
from ._events import RequestFailure as RequestFailure
from ._events import RequestInfo as RequestInfo
from ._events import Retry as Retry
from ._events import SessionClosing as SessionClosing
from ._events import SessionOpened as SessionOpened
from ._events import SlashCommand as SlashCommand
from ._events import StepGate as StepGate
from ._events import StepInput as StepInput
from ._events import StepPreview as StepPreview
from ._events import StepResults as StepResults
from ._events import TurnStopping as TurnStopping
from ._inbox import BOUNDARY_TYPES as BOUNDARY_TYPES
from ._inbox import INBOX_GATE as INBOX_GATE
from ._inbox import ImmediateGate as ImmediateGate
from ._inbox import InboxGate as InboxGate
from ._inbox import InputSource as InputSource
from ._inbox import QueueTarget as QueueTarget
from ._inbox import Splice as Splice
from ._loop import ABORTED as ABORTED
from ._loop import NoModelError as NoModelError
from ._loop import TurnLimitError as TurnLimitError
from ._loop import assemble_context_for as assemble_context_for
from ._outcome import AbortKind as AbortKind
from ._outcome import OutcomeKind as OutcomeKind
from ._outcome import TurnOutcome as TurnOutcome
from ._registry import AGENTS as AGENTS
from ._registry import AgentRegistry as AgentRegistry
from ._registry import last_turn_end as last_turn_end
from ._registry import plugin as plugin
from ._state import SNAPSHOT_FORM as SNAPSHOT_FORM
from ._state import AgentState as AgentState
from ._state import InboxItem as InboxItem

__all__ = [
    "ABORTED",
    "AGENTS",
    "BOUNDARY_TYPES",
    "INBOX_GATE",
    "ImmediateGate",
    "InboxGate",
    "InboxInput",
    "InputSource",
    "QueueTarget",
    "Splice",
    "AbortKind",
    "COMPACT",
    "ERROR",
    "EVENT",
    "PRE_STEP",
    "PROMPT_SUBMIT",
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
    "STEP_INPUT",
    "STEP_PREVIEW",
    "STEP_RESULTS",
    "REQUEST",
    "SLASH_COMMAND",
    "CommandReply",
    "SlashCommand",
    "REQUEST_ERROR",
    "Agent",
    "AgentError",
    "AgentEvent",
    "CompactRequest",
    "Compacted",
    "AgentOptions",
    "AgentRegistry",
    "AgentState",
    "InboxItem",
    "SNAPSHOT_FORM",
    "Block",
    "ErrorDecision",
    "Fail",
    "NoModelError",
    "OutcomeKind",
    "PreStep",
    "StepInput",
    "StepPreview",
    "StepResults",
    "Proceed",
    "RequestConfig",
    "RequestFailure",
    "RequestInfo",
    "Retry",
    "StepGate",
    "TurnLimitError",
    "TurnOutcome",
    "assemble_context_for",
    "last_turn_end",
    "plugin",
]
