"""The prompt's errors, under the kernel's `PromptError` branch (`PromptRenderError` is the kernel's own; the two
tool schema errors are raised where a `ToolSchema` is built, in dsh.runtime.llm, and re-exported here).

```
PromptError
├── PromptRenderError (ValueError)            the strict renderer refused a template (kernel)
├── PromptRegistrationError                   a registration was refused; nothing of it stays registered
│   ├── DuplicatePromptNameError (ValueError) the name is taken in that layer
│   ├── InvalidVariableNameError (ValueError) not [a-z][a-z0-9_]*
│   ├── NonFiniteOrderError (TypeError)       NaN or an infinity as `order`
│   └── ProviderSignatureError (TypeError)    a provider that takes neither the assemble context nor nothing
├── PromptAssemblyError                       assemble() refused the registries as they are
│   ├── CompleteSectionConflictError          more than one `complete` section is active
│   ├── ToolOrderError (ValueError)           `tool_order` names an unknown tool, or a provider used the marker
│   └── PromptProviderError                   a provider raised (the cause is chained) ...
│       └── ProviderResultError (TypeError)   ... or returned the wrong type
├── ToolSchemaError (TypeError)               tool parameters that are not JSON-shaped (dsh.runtime.llm)
└── ReadOnlyToolSchemaError (TypeError)       an in-place change of a shared tool schema's parameters (llm)
```
"""

from __future__ import annotations

from dsh.runtime.kernel.errors import PromptError, PromptRenderError
from dsh.runtime.llm import ReadOnlyToolSchemaError, ToolSchemaError

__all__ = [
    "CompleteSectionConflictError",
    "DuplicatePromptNameError",
    "InvalidVariableNameError",
    "NonFiniteOrderError",
    "PromptAssemblyError",
    "PromptError",
    "PromptProviderError",
    "PromptRegistrationError",
    "PromptRenderError",
    "ProviderResultError",
    "ProviderSignatureError",
    "ReadOnlyToolSchemaError",
    "ToolOrderError",
    "ToolSchemaError",
]


class PromptRegistrationError(PromptError):
    """A registration was refused. `kind` is section, context, variable or tools; `name` the refused name (for an
    anonymous tool provider, the provider's qualified name)."""

    def __init__(self, message: str, *, kind: str, name: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name


class DuplicatePromptNameError(PromptRegistrationError, ValueError):
    """The name is already registered in the layer the registration targets."""


class InvalidVariableNameError(PromptRegistrationError, ValueError):
    """A variable name no template could reference."""


class NonFiniteOrderError(PromptRegistrationError, TypeError):
    """`order` is NaN or infinite."""


class ProviderSignatureError(PromptRegistrationError, TypeError):
    """A text, variable or tool provider that cannot be called with the assemble context, nor with nothing."""


class PromptAssemblyError(PromptError):
    """`assemble()` cannot produce an assembly from the registries as they are."""


class CompleteSectionConflictError(PromptAssemblyError):
    """More than one effective section declares itself the complete prompt; `names` lists them in order."""

    def __init__(self, message: str, *, names: tuple[str, ...]) -> None:
        super().__init__(message)
        self.names = names


class ToolOrderError(PromptAssemblyError, ValueError):
    """`tool_order` lists tools no provider knows (`unknown`), or a provider returned the reserved marker name."""

    def __init__(self, message: str, *, unknown: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.unknown = unknown


class PromptProviderError(PromptAssemblyError):
    """A provider raised during an assembly. `kind` is section, context, variable or tools, `name` the section,
    context or variable (for a tool provider, its qualified name); the provider's exception is the `__cause__`."""

    def __init__(self, message: str, *, kind: str, name: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name


class ProviderResultError(PromptProviderError, TypeError):
    """A provider returned something other than what its kind must return (str; str or None; ToolSet)."""
