"""The tool registry, tool definitions, argument validation and the execution pipeline of one call."""

from .approval import APPROVER as APPROVER
from .approval import ASK as ASK
from .approval import DECIDE as DECIDE
from .approval import DENIED as DENIED
from .approval import POST_EXECUTE as POST_EXECUTE
from .approval import PRE_EXECUTE as PRE_EXECUTE
from .approval import QUESTION as QUESTION
from .approval import REJECTED as REJECTED
from .approval import Allow as Allow
from .approval import Answer as Answer
from .approval import Approval as Approval
from .approval import ApprovalRequest as ApprovalRequest
from .approval import Approver as Approver
from .approval import Ask as Ask
from .approval import Choice as Choice
from .approval import Deny as Deny
from .approval import PreDecision as PreDecision
from .approval import Question as Question
from .approval import Questions as Questions
from .approval import ToolExecution as ToolExecution
from .approval import denial_text as denial_text
from .approval import rejection_text as rejection_text
from .arguments import INVALID_ARGUMENTS as INVALID_ARGUMENTS
from .arguments import ArgumentValidator as ArgumentValidator
from .definition import AddedContext as AddedContext
from .definition import Tool as Tool
from .definition import ToolContext as ToolContext
from .definition import ToolDefinitionError as ToolDefinitionError
from .definition import ToolResult as ToolResult
from .environment import CREDENTIAL_PATTERNS as CREDENTIAL_PATTERNS
from .environment import CREDENTIAL_VALUES as CREDENTIAL_VALUES
from .environment import DSH_SETTINGS as DSH_SETTINGS
from .environment import TOOL_ENV as TOOL_ENV
from .environment import EnvPolicy as EnvPolicy
from .environment import ToolEnvironment as ToolEnvironment
from .registry import EXECUTOR as EXECUTOR
from .registry import TOOL_FAILED as TOOL_FAILED
from .registry import TOOLS as TOOLS
from .registry import UNKNOWN_TOOL as UNKNOWN_TOOL
from .registry import DuplicateToolError as DuplicateToolError
from .registry import ToolRegistry as ToolRegistry
from .registry import ToolView as ToolView
from .registry import plugin as plugin

__all__ = [
    "CREDENTIAL_PATTERNS",
    "CREDENTIAL_VALUES",
    "DSH_SETTINGS",
    "EXECUTOR",
    "INVALID_ARGUMENTS",
    "TOOLS",
    "TOOL_ENV",
    "TOOL_FAILED",
    "UNKNOWN_TOOL",
    "ArgumentValidator",
    "DuplicateToolError",
    "EnvPolicy",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ToolEnvironment",
    "ToolRegistry",
    "ToolResult",
    "ToolView",
    "plugin",
    "APPROVER",
    "QUESTION",
    "Answer",
    "Choice",
    "Question",
    "Questions",
    "ASK",
    "DECIDE",
    "DENIED",
    "POST_EXECUTE",
    "PRE_EXECUTE",
    "REJECTED",
    "Allow",
    "Approval",
    "ApprovalRequest",
    "Approver",
    "Ask",
    "Deny",
    "PreDecision",
    "ToolExecution",
    "denial_text",
    "rejection_text",
    "AddedContext",
]
