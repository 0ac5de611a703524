"""The one error tree of dsh: every error dsh raises on purpose derives from `DshError`.

```
DshError
├── KernelError                         plugin host misuse
│   ├── PluginLoadError                 a plugin could not be loaded (nothing of it stays registered)
│   │   ├── MissingServiceError         a needed service is provided by no loaded plugin
│   │   ├── ServiceConflictError        two plugins provide the same service in one layer
│   │   └── DuplicatePluginError        a plugin id is loaded twice
│   ├── ServiceNotFoundError (LookupError)   ctx.get() of a service nobody provides
│   └── ListenerError                   a waterfall listener raised; names the plugin and the event
├── ConfigError (ValueError)            a deployment file or a plugin config is invalid; names plugin and key path
│   └── ConfigErrors                    several at once, each a ConfigError (`errors`), in file order
├── JsonLineError (ValueError)         outside JSON lines past a limit or not JSON (dsh.runtime.jsonlines)
├── SessionError                        the session log (dsh.runtime.session)
├── PromptError                         prompt assembly (dsh.runtime.prompt)
│   └── PromptRenderError (ValueError)  the strict renderer refused a template
├── LlmError                            the model transport (dsh.runtime.llm)
├── ToolError                           the tool registry (dsh.runtime.tools)
└── ReplayError                         record and replay (replay/)
```

Errors carry their data as attributes; code routes on class or attribute, never on message text.
Subsystems subclass the branch they own in their own package.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ConfigError",
    "ConfigErrors",
    "DshError",
    "DuplicatePluginError",
    "KernelError",
    "ListenerError",
    "LlmError",
    "MissingServiceError",
    "PluginLoadError",
    "PromptError",
    "PromptRenderError",
    "ReplayError",
    "ServiceConflictError",
    "ServiceNotFoundError",
    "SessionError",
    "ToolError",
]


class DshError(Exception):
    """The root of every error dsh raises on purpose."""


class KernelError(DshError):
    """Misuse of the plugin host."""


class PluginLoadError(KernelError):
    """A plugin could not be loaded; everything it had registered has been disposed."""

    def __init__(self, message: str, *, plugin: str) -> None:
        super().__init__(message)
        self.plugin = plugin


class MissingServiceError(PluginLoadError):
    """A plugin needs a service that no loaded plugin provides."""

    def __init__(self, *, plugin: str, service: str, candidates: Sequence[str]) -> None:
        hint = (
            f"plugins that provide it: {', '.join(candidates)}"
            if candidates
            else "no declared plugin provides it"
        )
        super().__init__(
            f'plugin "{plugin}" needs service "{service}", which no loaded plugin provides; {hint}',
            plugin=plugin,
        )
        self.service = service
        self.candidates = tuple(candidates)


class ServiceConflictError(PluginLoadError):
    """Two plugins provide the same service in the same layer."""

    def __init__(self, *, plugin: str, service: str, provider: str) -> None:
        super().__init__(
            f'plugin "{plugin}" provides service "{service}", '
            f'which plugin "{provider}" already provides; unload one of them',
            plugin=plugin,
        )
        self.service = service
        self.provider = provider


class DuplicatePluginError(PluginLoadError):
    """A plugin id is already loaded in this context."""

    def __init__(self, *, plugin: str) -> None:
        super().__init__(
            f'plugin id "{plugin}" is already loaded; give the second instance its own id', plugin=plugin
        )


class ServiceNotFoundError(KernelError, LookupError):
    """`ctx.get(KEY)` found no provider in the context's scope chain or the global layer."""

    def __init__(self, *, service: str, provided: Sequence[str]) -> None:
        listing = ", ".join(sorted(provided)) or "none"
        super().__init__(f'no service "{service}" is provided here; provided services: {listing}')
        self.service = service
        self.provided = tuple(provided)


class ListenerError(KernelError):
    """A waterfall listener raised. The original exception is the `__cause__`."""

    def __init__(self, *, plugin: str, event: str, error: BaseException) -> None:
        super().__init__(
            f'listener of plugin "{plugin}" failed on event "{event}": {type(error).__name__}: {error}'
        )
        self.plugin = plugin
        self.event = event
        self.error = error


class ConfigError(DshError, ValueError):
    """A deployment file or a plugin's config is invalid.

    `plugin` is the plugin id ('' for the file itself), `path` the key path inside it (`$.a.b`), `line` the
    1-based line in the YAML file when known.
    """

    def __init__(
        self, message: str, *, plugin: str = "", path: str = "$", line: int | None = None, file: str = ""
    ) -> None:
        where = []
        if file:
            where.append(f"{file}:{line}" if line is not None else file)
        elif line is not None:
            where.append(f"line {line}")
        if plugin:
            where.append(f'plugin "{plugin}"')
        if path != "$":
            where.append(f"at `{path}`")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.reason = message
        self.plugin = plugin
        self.path = path
        self.line = line
        self.file = file


class ConfigErrors(ConfigError):
    """Every error found in one deployment (each a `ConfigError`, in file order, in `errors`), reported at once so
    a user fixes them in one pass; the first's `plugin`, `path`, `line` and `file` are this one's."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        listed = "\n".join(f"  {error}" for error in errors)
        super().__init__(f"{len(errors)} errors in the deployment:\n{listed}")
        first = errors[0]
        self.plugin, self.path, self.line, self.file = first.plugin, first.path, first.line, first.file
        self.errors = tuple(errors)

    @staticmethod
    def raise_all(errors: Sequence[ConfigError]) -> None:
        """Raise the one error, or all of them as `ConfigErrors`; nothing when there is none."""
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise ConfigErrors(errors)


class SessionError(DshError):
    """The session log refused an operation or a file."""


class PromptError(DshError):
    """Prompt assembly refused a registration or failed."""


class PromptRenderError(PromptError, ValueError):
    """The strict renderer refused a template; `section` names where, and `variable` the name of an unknown or
    valueless reference (None for a malformed one)."""

    def __init__(self, message: str, *, section: str, variable: str | None = None) -> None:
        super().__init__(message)
        self.section = section
        self.variable = variable


class LlmError(DshError):
    """The model transport failed."""


class ToolError(DshError):
    """The tool registry refused a registration or a call."""


class ReplayError(DshError):
    """Record or replay failed."""
