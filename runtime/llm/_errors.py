"""The model transport's errors, under `LlmError` (see runtime/kernel/errors.py for the whole tree).

```
LlmError
├── LlmCallError                  an adapter's call failed; carries the `LlmFailure` (code, status, ...)
├── ChunkProtocolError (ValueError)   a chunk sequence broke the stream protocol (BlockAssembler)
├── ProviderConflictError (ValueError)  a provider id is registered twice
└── ContextWindowError (ValueError)     an adapter answered a context window that is not a positive int or None
```

A `ToolSchema`'s two errors stay under `PromptError`, where they were before the schema moved here from
dsh.runtime.prompt (which re-exports them): `ToolSchemaError` (parameters that are not JSON-shaped) and
`ReadOnlyToolSchemaError` (an in-place change of shared parameters).
"""

from __future__ import annotations

from dsh.runtime.kernel.errors import LlmError, PromptError

from ._chunks import LlmFailure

__all__ = [
    "ChunkProtocolError",
    "ContextWindowError",
    "LlmCallError",
    "ProviderConflictError",
    "ReadOnlyToolSchemaError",
    "ToolSchemaError",
    "error_chain",
]


class LlmCallError(LlmError):
    """An adapter's call failed. `LlmRuntime` turns it into `finish{error{failure}}`."""

    def __init__(self, failure: LlmFailure) -> None:
        super().__init__(f"{failure.message} [{failure.code}]")
        self.failure = failure

    @property
    def code(self) -> str:
        return self.failure.code


class ChunkProtocolError(LlmError, ValueError):
    """A chunk broke the stream protocol; `index` is its position in the stream."""

    def __init__(self, message: str, *, index: int) -> None:
        super().__init__(f"chunk {index}: {message}")
        self.reason = message
        self.index = index


class ProviderConflictError(LlmError, ValueError):
    """An adapter is already registered for `provider`."""

    def __init__(self, provider: str) -> None:
        super().__init__(
            f'an adapter is already registered for provider "{provider}"; dispose it first or use another id'
        )
        self.provider = provider


class ContextWindowError(LlmError, ValueError):
    """The adapter of `provider` answered `value` as the context window of `model`: not a positive int or None."""

    def __init__(self, provider: str, model: str, value: object) -> None:
        super().__init__(
            f'the adapter for provider "{provider}" answered context_window={value!r} for model "{model}"; '
            "expected a positive number of tokens, or None when it does not know"
        )
        self.provider = provider
        self.model = model
        self.value = value


def error_chain(error: BaseException, *, limit: int = 8) -> str:
    """`Type: message <- Cause: message <- ...`: an exception and what caused it, for a failure's message."""
    chain: list[str] = []
    cause: BaseException | None = error
    while cause is not None and len(chain) < limit:
        chain.append(f"{type(cause).__name__}: {cause}")
        cause = cause.__cause__ or cause.__context__
    return " <- ".join(chain)


class ToolSchemaError(PromptError, TypeError):
    """A `ToolSchema`'s parameters are not JSON-shaped; `path` (`$.properties.x`) is where the first bad value is."""

    def __init__(self, message: str, *, tool: str, path: str) -> None:
        super().__init__(message)
        self.tool = tool
        self.path = path


class ReadOnlyToolSchemaError(PromptError, TypeError):
    """Something tried to change a tool's parameters in place; they are shared by every assembly. `operation` is
    what it tried (`__setitem__`, `append`...)."""

    def __init__(self, message: str, *, tool: str, operation: str) -> None:
        super().__init__(message)
        self.tool = tool
        self.operation = operation
