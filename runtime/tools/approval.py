"""The seams a person, a policy or the project's hooks stand on between the model and a tool call: before a call runs
(`tools/pre-execute`: allow, deny with a reason, or ask for approval), the approval itself (the `approval` service a
plugin provides: dsh.plugins.interaction; the question put to a person: `approval/ask`), a tool's questions for a
person (`interaction/question`), and after it ran (`tools/post-execute`: the result, replaced or with
context added for the model's next step). The pipeline in `registry` drives them; the wording the model gets for a
denial or a rejection is the original's, and lives here once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from dsh.runtime.kernel import ServiceKey, Waterfall
from dsh.runtime.llm import ToolCallBlock

from .definition import Tool, ToolContext, ToolResult

__all__ = [
    "APPROVER",
    "ASK",
    "DECIDE",
    "DENIED",
    "POST_EXECUTE",
    "PRE_EXECUTE",
    "QUESTION",
    "REJECTED",
    "Allow",
    "Answer",
    "Approval",
    "ApprovalRequest",
    "Approver",
    "Ask",
    "Choice",
    "Deny",
    "PreDecision",
    "Question",
    "Questions",
    "ToolExecution",
    "denial_text",
    "rejection_text",
]

DENIED = "DENIED"
"""The code of a call a `tools/pre-execute` listener (a hook) denied."""
REJECTED = "REJECTED"
"""The code of a call whose approval was not granted."""


@dataclass(frozen=True)
class ToolExecution:
    """One call about to run (or that ran): the tool, the call as the model sent it, its validated arguments and
    where it runs."""

    tool: Tool
    call: ToolCallBlock
    arguments: dict[str, Any]
    context: ToolContext


@dataclass(frozen=True)
class Allow:
    """Run the call (the default when no listener objects)."""


@dataclass(frozen=True)
class Deny:
    """Do not run the call; the model is told `reason`."""

    reason: str


@dataclass(frozen=True)
class Ask:
    """Run the call only if it is approved (`reason`: why approval is needed, shown to whoever answers)."""

    reason: str | None = None


PreDecision = Allow | Deny | Ask

PRE_EXECUTE = Waterfall[PreDecision, ToolExecution]("tools/pre-execute")
"""Before a validated call runs: the value starts `Allow()`; a listener returns `Deny` or `Ask` to own the decision,
or calls next. A denied call never runs; an asked one runs only once the `approval` service grants it."""

POST_EXECUTE = Waterfall[ToolResult, ToolExecution]("tools/post-execute")
"""After a call ran: the value is its result; a listener may replace it (a hook that blocks turns it into feedback)
or add `context` for the model's next step."""

ApprovalOutcomeName = Literal["allowed-once", "allowed-always", "rejected", "cancelled", "unavailable"]


@dataclass(frozen=True)
class ApprovalRequest:
    """What is asked: may `tool` run call `call_id`, for `reason`? `context` is where the call runs (its agent and
    log)."""

    tool: str
    call_id: str
    reason: str | None
    context: ToolContext


@dataclass(frozen=True)
class Approval:
    """How a request was decided, and the person's message to the model, if any."""

    outcome: ApprovalOutcomeName
    message: str | None = None

    @property
    def granted(self) -> bool:
        return self.outcome in ("allowed-once", "allowed-always")


class Approver(Protocol):
    """The `approval` service: decides one request (by the session's policy, a person, or a recording)."""

    async def request(self, request: ApprovalRequest) -> Approval: ...


APPROVER = ServiceKey[Approver]("approval")

DECIDE = Waterfall["Approval | None", ApprovalRequest]("approval/decide")
"""Before the session's policy applies: a listener that knows the outcome already returns it (a replay returns
the recorded one, so nobody is asked); None: decide by the policy. The `approval` service runs it."""

ASK = Waterfall["Approval | None", ApprovalRequest]("approval/ask")
"""The question put to a person when the policy is `ask`: each surface that can answer (the terminal of `dsh chat`
or `dsh run`, an ACP client) returns the answer, or calls next when it cannot ask; None from the whole chain: no
one could be asked (`unavailable`)."""


def denial_text(reason: str) -> str:
    """What the model gets for a call a hook denied: the original's `Error: <reason>`."""
    return f"Error: {reason}"


def rejection_text(tool: str, approval: Approval) -> str:
    """What the model gets for a call whose approval was not granted, in the original's words (a rejection's
    message, when the person gave one, follows it)."""
    if approval.outcome == "rejected":
        text = f'Error: the user rejected tool "{tool}"'
        return f"{text}: {approval.message}" if approval.message else text
    if approval.outcome == "cancelled":
        return f'Error: approval for tool "{tool}" was cancelled'
    return f'Error: tool "{tool}" requires approval, but no approval channel is available'


@dataclass(frozen=True)
class Choice:
    """One option a question offers: its label, and what choosing it means."""

    label: str
    description: str | None = None


@dataclass(frozen=True)
class Question:
    """One question for a person: a stable `id` echoed in the answer, the text, an optional short header, the
    options (none: free text only), and whether several may be chosen."""

    id: str
    question: str
    header: str | None = None
    options: tuple[Choice, ...] = ()
    multi_select: bool = False


@dataclass(frozen=True)
class Answer:
    """A person's answer to question `id`: the labels chosen, and what they typed instead, if anything."""

    id: str
    selected: tuple[str, ...] = ()
    custom: str | None = None


@dataclass(frozen=True)
class Questions:
    """Questions a tool call (`ask_user_question`) puts to a person, where the call runs."""

    questions: tuple[Question, ...]
    context: ToolContext


QUESTION = Waterfall["tuple[Answer, ...] | None", Questions]("interaction/question")
"""The questions of an `ask_user_question` call: each surface that can ask a person returns the answers, or calls
next; None from the whole chain: no one could be asked."""
