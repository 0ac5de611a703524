"""The prompt's errors, under the kernel's `PromptError` branch (`PromptRenderError` is the kernel's own).

```
PromptError
├── PromptRenderError (ValueError)            the strict renderer refused a template (kernel)
├── PromptRegistrationError                   a registration was refused; nothing of it stays registered
│   ├── DuplicatePromptNameError (ValueError) the name is taken in that layer
│   ├── InvalidVariableNameError (ValueError) not [a-z][a-z0-9_]*
│   └── NonFiniteOrderError (TypeError)       NaN or an infinity as `order`
└── PromptAssemblyError                       assemble() refused the registries as they are
    ├── CompleteSectionConflictError          more than one `complete` section is active
    └── ToolOrderError (ValueError)           `tool_order` names an unknown tool, or a provider used the marker
```
"""

from __future__ import annotations

from runtime.kernel.errors import PromptError, PromptRenderError

__all__ = [
    "CompleteSectionConflictError",
    "DuplicatePromptNameError",
    "InvalidVariableNameError",
    "NonFiniteOrderError",
    "PromptAssemblyError",
    "PromptError",
    "PromptRegistrationError",
    "PromptRenderError",
    "ToolOrderError",
]


class PromptRegistrationError(PromptError):
    """A registration was refused. `kind` is section, context or variable; `name` the refused name."""

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
