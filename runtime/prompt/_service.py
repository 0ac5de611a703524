"""The `SystemPrompt` service: the layered registries of sections, contexts, variables, tool providers and
runtime-context suppressors, and `assemble()` (spec/prompt-and-subagents.md §1.2-§1.7, §1.9).

One `_Registry` holds the layers (global, and one per scope, created lazily and dropped when empty). Callers get a
`SystemPrompt` view bound to their own context (`bind_context`), so each registration lands in the caller's layer
and its disposer on the caller's plugin or scope.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from dsh.runtime.kernel import Context, Disposer, Scope, ServiceKey
from dsh.runtime.kernel.errors import PromptError
from dsh.runtime.llm import ToolSchema

from ._errors import (
    CompleteSectionConflictError,
    DuplicatePromptNameError,
    InvalidVariableNameError,
    NonFiniteOrderError,
    ProviderResultError,
)
from ._events import ASSEMBLE, CHANGE, ChangeKind, PromptChange
from ._providers import label as _label
from ._providers import raised as _raised
from ._providers import with_context as _with_context
from ._render import VARIABLE_NAME
from ._tool_order import order_tools
from ._types import (
    AssembleContext,
    AssembledText,
    PromptAssembly,
    PromptContext,
    PromptSection,
    ToolProvider,
    ToolSet,
    VariableProvider,
)

__all__ = ["SYSTEM_PROMPT", "LayerSnapshot", "SystemPrompt"]


class LayerSnapshot(TypedDict):
    """One layer as `SystemPrompt.describe()` shows it: (name, order, complete) sections, (name, order) contexts,
    variable names, and how many tool providers and suppressors it holds."""

    sections: list[tuple[str, float, bool]]
    contexts: list[tuple[str, float]]
    variables: list[str]
    tools: int
    suppressors: int


@dataclass(eq=False)
class _ToolEntry:
    """One `tools()` registration; compared by identity, so one provider registered twice gives two entries.
    `label` names the anonymous provider in errors (its qualified name)."""

    provider: ToolProvider
    call: Callable[[AssembleContext], ToolSet]
    label: str


@dataclass(eq=False)
class _Suppressor:
    """One `suppress_runtime_context()` registration."""


@dataclass(eq=False)
class _Layer:
    """The registrations of one layer (the global one, or one scope's)."""

    sections: dict[str, _Named] = field(default_factory=dict)
    contexts: dict[str, _Named] = field(default_factory=dict)
    variables: dict[str, _Variable] = field(default_factory=dict)
    tools: list[_ToolEntry] = field(default_factory=list)
    suppressors: list[_Suppressor] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.sections or self.contexts or self.variables or self.tools or self.suppressors)


@dataclass(frozen=True, eq=False)
class _Dynamic:
    """A section or context whose text comes from a provider, called (with the context) on every assembly."""

    kind: str
    name: str
    call: Callable[[AssembleContext], str]


_Text = AssembledText | _Dynamic
"""A section or context's text as the plan uses it: a static text is resolved at registration (`AssembledText` is
frozen, so shared safely)."""


@dataclass(frozen=True, eq=False)
class _Named:
    """A registered section or context, with its text as the plan uses it."""

    definition: PromptSection | PromptContext
    text: _Text


@dataclass(frozen=True, eq=False)
class _Variable:
    """A registered variable: the provider as registered, and as the assembler calls it."""

    provider: VariableProvider
    call: Callable[[AssembleContext], str | None]


@dataclass(eq=False)
class _Plan:
    """What an assembly for one scope reads from the registries, merged and ordered: the spec's steps 1, 3 and 5 and
    the complete-section check, which depend on the registrations only. Every provider is still called on every
    assembly, since it may depend on the context."""

    suppressed: bool
    variables: tuple[tuple[str, Callable[[AssembleContext], str | None]], ...]
    tool_providers: tuple[_ToolEntry, ...]
    sections: tuple[_Text, ...]
    static_sections: tuple[AssembledText, ...] | None  # `sections`, when no text has a provider
    complete_names: tuple[str, ...]  # in order; more than one is the conflict, raised at its step every time
    complete_index: int | None  # the one complete section's place in `sections`
    contexts: tuple[_Text, ...]  # () when suppressed: no context provider is called
    static_contexts: tuple[AssembledText, ...] | None
    # The last tool sets the providers returned and their ordering (see `_ordered_tools`); the only field an
    # assembly writes, and dropped with the plan.
    tools: tuple[tuple[ToolSet, ...], tuple[ToolSchema, ...]] | None = None


_PLANS = 256
"""At most this many scopes' plans are kept (a scope with no layer of its own never invalidates its plan)."""


class _Registry:
    """The state shared by every view of one SystemPrompt service."""

    def __init__(self, home: Context, tool_order: Sequence[str] | None) -> None:
        self.home = home
        self.tool_order = tuple(tool_order) if tool_order is not None else None
        self.layers: dict[Scope | None, _Layer] = {}
        # Each scope's plan, valid until the next registration or disposal anywhere (`changed`).
        self.plans: dict[Scope | None, _Plan] = {}

    def changed(self) -> None:
        """A layer gained or lost an entry: every plan may be stale."""
        self.plans.clear()

    def plan(self, scope: Scope | None) -> _Plan:
        plan = self.plans.get(scope)
        if plan is None:
            if len(self.plans) >= _PLANS:
                self.plans.clear()
            plan = self.plans[scope] = _make_plan(self.chain(scope))
        return plan

    def layer(self, scope: Scope | None) -> _Layer:
        layer = self.layers.get(scope)
        if layer is None:
            layer = self.layers[scope] = _Layer()
        return layer

    def prune(self, scope: Scope | None, layer: _Layer) -> None:
        if layer.empty() and self.layers.get(scope) is layer:
            del self.layers[scope]

    def chain(self, scope: Scope | None) -> list[_Layer]:
        """The layers an assembly for `scope` merges: global first, then the scope chain farthest to nearest."""
        scopes: list[Scope | None] = [None]
        if scope is not None:
            scopes.extend(reversed(list(scope.chain())))
        return [layer for s in scopes if (layer := self.layers.get(s)) is not None]


class SystemPrompt:
    """The system-prompt registry as one context sees it: `ctx.get(SYSTEM_PROMPT)`.

    Registrations land in the layer of the bound context (global, or its scope) and are undone when that context's
    owner (plugin or scope) is disposed, or when the returned disposer is called.
    """

    __slots__ = ("_ctx", "_registry")

    def __init__(self, registry: _Registry, ctx: Context) -> None:
        self._registry = registry
        self._ctx = ctx

    def bind_context(self, ctx: Context) -> SystemPrompt:
        """This service as `ctx` sees it (the kernel calls this on every `ctx.get(SYSTEM_PROMPT)`)."""
        return SystemPrompt(self._registry, ctx)

    # -- registration --------------------------------------------------------------------------------------

    def section(self, section: PromptSection) -> Disposer:
        """Register a section in this context's layer; a name already there is refused."""
        named = _named("section", section)
        self._check_free("section", section.name, lambda layer: layer.sections)

        def add(layer: _Layer) -> None:
            layer.sections[section.name] = named

        def remove(layer: _Layer) -> None:
            if layer.sections.get(section.name) is named:
                del layer.sections[section.name]

        return self._commit("section", section.name, add, remove)

    def context(self, context: PromptContext) -> Disposer:
        """Register a runtime-context contribution (sent as a user-role snapshot, never in the system prompt)."""
        named = _named("context", context)
        self._check_free("context", context.name, lambda layer: layer.contexts)

        def add(layer: _Layer) -> None:
            layer.contexts[context.name] = named

        def remove(layer: _Layer) -> None:
            if layer.contexts.get(context.name) is named:
                del layer.contexts[context.name]

        return self._commit("context", context.name, add, remove)

    def variable(self, name: str, provider: VariableProvider) -> Disposer:
        """Register `{{name}}`: `provider(context)` (or `provider()`) gives its value per assembly, or `None` for no
        value."""
        if not isinstance(name, str) or VARIABLE_NAME.fullmatch(name) is None:
            raise InvalidVariableNameError(
                f'invalid prompt variable name "{name}" (must match /^[a-z][a-z0-9_]*$/)',
                kind="variable",
                name=name,
            )
        if not callable(provider):
            raise TypeError(
                f'prompt variable "{name}" provider must be callable, got {type(provider).__name__}'
            )
        entry = _Variable(
            provider, _with_context(provider, "variable", name, f'prompt variable "{name}" provider')
        )
        self._check_free("variable", name, lambda layer: layer.variables)

        def add(layer: _Layer) -> None:
            layer.variables[name] = entry

        def remove(layer: _Layer) -> None:
            if layer.variables.get(name) is entry:
                del layer.variables[name]

        return self._commit("variable", name, add, remove)

    def tools(self, provider: ToolProvider) -> Disposer:
        """Register a tool provider (`provider(context)` or `provider()` gives a `ToolSet`); every provider of the
        global layer and the scope chain contributes."""
        if not callable(provider):
            raise TypeError(f"a tool provider must be callable, got {type(provider).__name__}")
        label = _label(provider)
        entry = _ToolEntry(
            provider, _with_context(provider, "tools", label, f"a tool provider ({label})"), label
        )

        def add(layer: _Layer) -> None:
            layer.tools.append(entry)

        def remove(layer: _Layer) -> None:
            _remove_identical(layer.tools, entry)

        return self._commit("tools", None, add, remove)

    def suppress_runtime_context(self) -> Disposer:
        """Suppress runtime contexts while this (or any other) suppressor exists in the global layer or the chain."""
        entry = _Suppressor()

        def add(layer: _Layer) -> None:
            layer.suppressors.append(entry)

        def remove(layer: _Layer) -> None:
            _remove_identical(layer.suppressors, entry)

        return self._commit("suppress-runtime-context", None, add, remove)

    def _check_free(self, kind: str, name: str, entries: Callable[[_Layer], dict[str, Any]]) -> None:
        layer = self._registry.layers.get(self._ctx.scope)
        if layer is None or name not in entries(layer):
            return
        label = f'prompt {kind} "{name}" is already registered'
        if self._ctx.scope is not None:
            message = f"{label} in this scope"
        else:
            message = (
                f"{label} (for a per-agent override, register through that agent's scoped context instead)"
            )
        raise DuplicatePromptNameError(message, kind=kind, name=name)

    def _commit(
        self,
        kind: ChangeKind,
        name: str | None,
        add: Callable[[_Layer], None],
        remove: Callable[[_Layer], None],
    ) -> Disposer:
        """Add to this context's layer with its undo recorded first, then announce it; if announcing fails, the
        registration is rolled back and the error raised."""
        registry, ctx, scope = self._registry, self._ctx, self._ctx.scope
        added: _Layer | None = None

        def undo() -> None:
            nonlocal added
            layer, added = added, None
            if layer is None:
                return
            remove(layer)
            registry.prune(scope, layer)
            registry.changed()
            _announce(ctx, PromptChange(kind, name, scope, registered=False))

        disposer = ctx.effect(undo)  # raises for a disposed context, before anything is added
        added = registry.layer(scope)
        add(added)
        registry.changed()
        try:
            _announce(ctx, PromptChange(kind, name, scope, registered=True))
        except BaseException:
            disposer()
            raise
        return disposer

    # -- inspection ----------------------------------------------------------------------------------------

    def describe(self) -> dict[str, LayerSnapshot]:
        """A plain snapshot of every layer, keyed by scope path (`""` for global; `path#2`... for distinct live
        scopes that share a path), for diagnostics and tests."""
        snapshot: dict[str, LayerSnapshot] = {}
        for scope, layer in self._registry.layers.items():
            key = base = scope.path if scope is not None else ""
            count = 1
            while key in snapshot:
                count += 1
                key = f"{base}#{count}"
            snapshot[key] = LayerSnapshot(
                sections=[
                    (s.name, s.order, s.complete)
                    for s in (named.definition for named in layer.sections.values())
                    if isinstance(s, PromptSection)
                ],
                contexts=[(c.definition.name, c.definition.order) for c in layer.contexts.values()],
                variables=list(layer.variables),
                tools=len(layer.tools),
                suppressors=len(layer.suppressors),
            )
        return snapshot

    # -- assembly ------------------------------------------------------------------------------------------

    async def assemble(self, context: AssembleContext | None = None) -> PromptAssembly:
        """Resolve the registries for `context` (its scope's layers over the global one) into a fresh assembly,
        run the `system-prompt/assemble` waterfall through `context.ctx`, then re-apply the complete-section and
        suppression rules. Pure: it calls providers and listeners and nothing else."""
        context = AssembleContext() if context is None else context
        registry = self._registry
        scope = None if context.ctx is None else context.ctx.scope
        # Merged and ordered once per registry state; a provider registered during this assembly is first
        # consulted by the next one.
        plan = registry.plans.get(scope) or registry.plan(scope)

        variables: dict[str, str | None] = {}
        for name, call in plan.variables:
            try:
                value = call(context)
            except Exception as error:
                raise _raised(f'prompt variable "{name}" provider', error, "variable", name) from error
            if value is not None and type(value) is not str and not isinstance(value, str):
                raise ProviderResultError(
                    f'prompt variable "{name}" provider returned {type(value).__name__}, not str or None',
                    kind="variable",
                    name=name,
                )
            variables[name] = value

        tool_sets: list[ToolSet] = []
        for entry in plan.tool_providers:
            try:
                tool_set = entry.call(context)
            except Exception as error:
                label = entry.label
                raise _raised(f"a tool provider ({label})", error, "tools", label) from error
            if type(tool_set) is not ToolSet and not isinstance(tool_set, ToolSet):
                raise ProviderResultError(
                    f"a tool provider ({entry.label}) returned {type(tool_set).__name__}, not ToolSet",
                    kind="tools",
                    name=entry.label,
                )
            tool_sets.append(tool_set)

        if len(plan.complete_names) > 1:
            quoted = ", ".join(_json_quote(name) for name in plan.complete_names)
            raise CompleteSectionConflictError(
                f"multiple complete prompt sections are active: {quoted}", names=plan.complete_names
            )
        if plan.static_sections is not None:
            resolved = list(plan.static_sections)
        else:
            resolved = _resolve_all(plan.sections, context)
        complete = resolved[plan.complete_index] if plan.complete_index is not None else None

        if plan.static_contexts is not None:
            runtime_contexts = list(plan.static_contexts)
        else:
            runtime_contexts = _resolve_all(plan.contexts, context)

        tools = _ordered_tools(plan, tool_sets, registry.tool_order)
        assembly = PromptAssembly(resolved, runtime_contexts, tools, variables)

        via = context.ctx if context.ctx is not None else registry.home
        result = await via.waterfall(ASSEMBLE, assembly, context)
        if not isinstance(result, PromptAssembly):
            raise TypeError(
                f'the "{ASSEMBLE.name}" waterfall returned {type(result).__name__}, not PromptAssembly'
            )
        if complete is not None:
            result.sections = [complete]
        if plan.suppressed:
            result.contexts = []
        return result


SYSTEM_PROMPT = ServiceKey[SystemPrompt]("system-prompt")
"""The prompt service; `ctx.get(SYSTEM_PROMPT)` is bound to `ctx` (registrations land in its layer)."""


def _named(kind: str, entry: PromptSection | PromptContext) -> _Named:
    """A section or context checked for registration, with its text as the plan will use it."""
    name, order, text = entry.name, entry.order, entry.text
    if not isinstance(name, str) or not name:
        raise TypeError(f"a prompt {kind} name must be a non-empty string, got {name!r}")
    if isinstance(order, bool) or not isinstance(order, int | float) or not math.isfinite(order):
        raise NonFiniteOrderError(
            f'prompt {kind} "{name}" order must be a finite number', kind=kind, name=name
        )
    if isinstance(text, str):
        return _Named(entry, AssembledText(name, text))
    if not callable(text):
        raise TypeError(
            f'prompt {kind} "{name}" text must be a string or a callable, got {type(text).__name__}'
        )
    return _Named(
        entry, _Dynamic(kind, name, _with_context(text, kind, name, f'prompt {kind} "{name}" text provider'))
    )


def _make_plan(layers: list[_Layer]) -> _Plan:
    """Merge `layers` (global first, nearest scope last) by name, the nearest winning and keeping the position of
    the entry it shadows, and order sections and contexts stably by `order`."""
    suppressed = any(layer.suppressors for layer in layers)
    variables: dict[str, _Variable] = {}
    sections: dict[str, _Named] = {}
    contexts: dict[str, _Named] = {}
    tool_providers: list[_ToolEntry] = []
    for layer in layers:
        variables.update(layer.variables)
        sections.update(layer.sections)
        contexts.update(layer.contexts)
        tool_providers.extend(layer.tools)
    ordered = sorted(sections.values(), key=_order)
    complete = [
        index
        for index, named in enumerate(ordered)
        if isinstance(named.definition, PromptSection) and named.definition.complete
    ]
    texts = tuple(named.text for named in ordered)
    context_texts = () if suppressed else tuple(named.text for named in sorted(contexts.values(), key=_order))
    return _Plan(
        suppressed=suppressed,
        variables=tuple((name, variable.call) for name, variable in variables.items()),
        tool_providers=tuple(tool_providers),
        sections=texts,
        static_sections=_all_static(texts),
        complete_names=tuple(ordered[index].definition.name for index in complete),
        complete_index=complete[0] if len(complete) == 1 else None,
        contexts=context_texts,
        static_contexts=_all_static(context_texts),
    )


def _all_static(texts: tuple[_Text, ...]) -> tuple[AssembledText, ...] | None:
    static = tuple(text for text in texts if isinstance(text, AssembledText))
    return static if len(static) == len(texts) else None


def _resolve_all(texts: tuple[_Text, ...], context: AssembleContext) -> list[AssembledText]:
    """Each text for this assembly, calling the text providers in order."""
    resolved: list[AssembledText] = []
    for text in texts:
        if isinstance(text, AssembledText):
            resolved.append(text)
            continue
        what = f'prompt {text.kind} "{text.name}" text provider'
        try:
            value = text.call(context)
        except Exception as error:
            raise _raised(what, error, text.kind, text.name) from error
        if not isinstance(value, str):
            raise ProviderResultError(
                f"{what} returned {type(value).__name__}, not str", kind=text.kind, name=text.name
            )
        resolved.append(AssembledText(text.name, value))
    return resolved


def _ordered_tools(
    plan: _Plan, tool_sets: list[ToolSet], tool_order: tuple[str, ...] | None
) -> list[ToolSchema]:
    """The providers' schemas, checked and ordered (spec §1.5 step 9), in a fresh list. Schemas are immutable
    values, shared with the providers and every assembly. When every provider returned the very tuples it returned
    last time (tuples of frozen schemas cannot have changed), the last ordering is reused."""
    last = plan.tools
    if last is not None and len(last[0]) == len(tool_sets):
        before = last[0]
        for index, now in enumerate(tool_sets):
            old = before[index]
            if old.schemas is not now.schemas or old.known_names is not now.known_names:
                break
        else:
            return list(last[1])
    schemas: list[ToolSchema] = []
    known: list[str] = []  # names declared beyond the schemas' own (order_tools reads those itself)
    reusable = True
    for entry, tool_set in zip(plan.tool_providers, tool_sets, strict=True):
        for schema in tool_set.schemas:
            if type(schema) is not ToolSchema and not isinstance(schema, ToolSchema):
                raise ProviderResultError(
                    f"a tool provider ({entry.label}) returned a {type(schema).__name__} among its schemas, "
                    "not a ToolSchema",
                    kind="tools",
                    name=entry.label,
                )
        schemas.extend(tool_set.schemas)
        if tool_set.known_names is not None:
            known.extend(tool_set.known_names)
        # only tuples are known not to change in place (a list in a ToolSet could)
        reusable = (
            reusable and type(tool_set.schemas) is tuple and type(tool_set.known_names) in (tuple, type(None))
        )
    ordered = order_tools(schemas, known, tool_order)
    if reusable:
        plan.tools = (tuple(tool_sets), tuple(ordered))
    return ordered


def _order(named: _Named) -> float:
    return named.definition.order


def _json_quote(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _remove_identical(items: list[Any], entry: object) -> None:
    for index, item in enumerate(items):
        if item is entry:
            del items[index]
            return


def _announce(ctx: Context, change: PromptChange) -> None:
    """Emit `system-prompt/change` synchronously: registrations are sync (plugin `apply` is), so each listener must
    finish without suspending. The kernel's emit contains listener exceptions; a listener that suspends is closed
    and refused here, loudly."""
    coroutine = ctx.emit(CHANGE, change)
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise PromptError(
        f'a "{CHANGE.name}" listener suspended; change listeners run synchronously inside the registration and '
        "must not await anything that suspends"
    )
