"""The system prompt: registries, scoped layers, `assemble()`, the strict renderer and the `dsh.runtime.prompt` plugin."""

from dsh.runtime.kernel.errors import PromptError as PromptError
from dsh.runtime.kernel.errors import PromptRenderError as PromptRenderError
from dsh.runtime.llm import ToolSchema as ToolSchema

from ._errors import CompleteSectionConflictError as CompleteSectionConflictError
from ._errors import DuplicatePromptNameError as DuplicatePromptNameError
from ._errors import InvalidVariableNameError as InvalidVariableNameError
from ._errors import NonFiniteOrderError as NonFiniteOrderError
from ._errors import PromptAssemblyError as PromptAssemblyError
from ._errors import PromptProviderError as PromptProviderError
from ._errors import PromptRegistrationError as PromptRegistrationError
from ._errors import ProviderResultError as ProviderResultError
from ._errors import ProviderSignatureError as ProviderSignatureError
from ._errors import ReadOnlyToolSchemaError as ReadOnlyToolSchemaError
from ._errors import ToolOrderError as ToolOrderError
from ._errors import ToolSchemaError as ToolSchemaError
from ._events import ASSEMBLE as ASSEMBLE
from ._events import CHANGE as CHANGE
from ._events import PromptChange as PromptChange
from ._plugin import IDENTITY as IDENTITY
from ._plugin import IDENTITY_SECTION as IDENTITY_SECTION
from ._plugin import PERSONA_SECTION as PERSONA_SECTION
from ._plugin import PromptConfig as PromptConfig
from ._plugin import plugin as plugin
from ._render import CONTEXT_SNAPSHOT_HEADER as CONTEXT_SNAPSHOT_HEADER
from ._render import CONTEXT_SNAPSHOT_NONE as CONTEXT_SNAPSHOT_NONE
from ._render import interpolate as interpolate
from ._render import render_context_sections as render_context_sections
from ._render import render_context_snapshot as render_context_snapshot
from ._render import render_prompt as render_prompt
from ._service import SYSTEM_PROMPT as SYSTEM_PROMPT
from ._service import LayerSnapshot as LayerSnapshot
from ._service import SystemPrompt as SystemPrompt
from ._tool_order import TOOL_ORDER_REST as TOOL_ORDER_REST
from ._types import AssembleContext as AssembleContext
from ._types import AssembledText as AssembledText
from ._types import PromptAssembly as PromptAssembly
from ._types import PromptContext as PromptContext
from ._types import PromptSection as PromptSection
from ._types import TextProvider as TextProvider
from ._types import ToolProvider as ToolProvider
from ._types import ToolSet as ToolSet
from ._types import VariableProvider as VariableProvider

__all__ = [
    "ASSEMBLE",
    "CHANGE",
    "CONTEXT_SNAPSHOT_HEADER",
    "CONTEXT_SNAPSHOT_NONE",
    "IDENTITY",
    "IDENTITY_SECTION",
    "PERSONA_SECTION",
    "SYSTEM_PROMPT",
    "TOOL_ORDER_REST",
    "AssembleContext",
    "AssembledText",
    "CompleteSectionConflictError",
    "DuplicatePromptNameError",
    "InvalidVariableNameError",
    "LayerSnapshot",
    "NonFiniteOrderError",
    "PromptAssembly",
    "PromptAssemblyError",
    "PromptChange",
    "PromptConfig",
    "PromptContext",
    "PromptError",
    "PromptProviderError",
    "PromptRegistrationError",
    "PromptRenderError",
    "PromptSection",
    "ProviderResultError",
    "ProviderSignatureError",
    "ReadOnlyToolSchemaError",
    "SystemPrompt",
    "TextProvider",
    "ToolOrderError",
    "ToolProvider",
    "ToolSchema",
    "ToolSchemaError",
    "ToolSet",
    "VariableProvider",
    "interpolate",
    "plugin",
    "render_context_sections",
    "render_context_snapshot",
    "render_prompt",
]
