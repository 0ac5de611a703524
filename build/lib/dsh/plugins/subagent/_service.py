"""The subagent service (`SUBAGENTS`): the provider registry with its lifecycle events, the depth limit, and
`start`, the one way to run a child; and the plugin that provides it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

import msgspec

from dsh.runtime.kernel import Context, Disposer, Emit, Plugin, ServiceKey

from ._types import SubagentError, SubagentProvider, SubagentRequest, SubagentRun

__all__ = [
    "PROVIDER_ADDED",
    "PROVIDER_REMOVED",
    "SUBAGENTS",
    "SubagentConfig",
    "SubagentRegistry",
    "SubagentView",
    "plugin",
]

PROVIDER_ADDED = Emit[SubagentProvider]("subagent/provider-added")
"""Fired inside `register`, after the provider is in place. A listener's failure propagates to the registering
caller and rolls the registration back (its `provider-removed` is fired). Listeners must not suspend."""

PROVIDER_REMOVED = Emit[SubagentProvider]("subagent/provider-removed")
"""Fired by the registration's disposer, after the provider is gone. Each listener's failure is contained and
reported; later listeners still run. Listeners must not suspend."""


class SubagentConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`max_depth`: the deepest delegation allowed (a top-level agent is depth 0, its children 1, ...); 0 forbids
    delegation altogether."""

    max_depth: Annotated[int, msgspec.Meta(ge=0)] = 3


class SubagentRegistry:
    """The registered providers, in registration order, and the depth limit every start obeys."""

    def __init__(self, max_depth: int = 3) -> None:
        self.max_depth = max_depth
        self._providers: dict[str, SubagentProvider] = {}

    def bind_context(self, ctx: Context) -> SubagentView:
        return SubagentView(self, ctx)


class SubagentView:
    """The service as one context sees it: a provider it registers is removed when that context's plugin unloads,
    and its lifecycle events go through it."""

    __slots__ = ("_ctx", "_registry")

    def __init__(self, registry: SubagentRegistry, ctx: Context) -> None:
        self._registry = registry
        self._ctx = ctx

    @property
    def max_depth(self) -> int:
        return self._registry.max_depth

    def register(self, provider: SubagentProvider) -> Disposer:
        """Add `provider` and fire `subagent/provider-added`; if a listener raises, the registration is undone
        (firing `subagent/provider-removed`) and the error raised. The disposer removes it and fires
        `subagent/provider-removed`."""
        providers = self._registry._providers
        if provider.name in providers:
            raise SubagentError(
                f'a subagent provider named "{provider.name}" is already registered; registered: '
                f"{', '.join(providers)}",
                code="DUPLICATE_PROVIDER",
            )
        providers[provider.name] = provider
        ctx = self._ctx

        def undo() -> None:
            if providers.get(provider.name) is provider:
                del providers[provider.name]
            ctx.emit_now(PROVIDER_REMOVED, provider)

        disposer = ctx.effect(undo)
        try:
            ctx.emit_now(PROVIDER_ADDED, provider, contain=False)
        except BaseException:
            disposer()
            raise
        return disposer

    def get(self, name: str) -> SubagentProvider | None:
        return self._registry._providers.get(name)

    def providers(self) -> list[SubagentProvider]:
        """Every registered provider, in registration order."""
        return list(self._registry._providers.values())

    @asynccontextmanager
    async def start(self, name: str, request: SubagentRequest) -> AsyncIterator[SubagentRun]:
        """Start a child with provider `name`: `async with service.start(name, request) as run`. Refused, before
        anything is created, when no such provider is registered or the child would be deeper than `max_depth`."""
        provider = self.get(name)
        if provider is None:
            registered = ", ".join(self._registry._providers) or "(none)"
            raise SubagentError(
                f'no subagent provider registered for "{name}"; registered: {registered}', code="NO_PROVIDER"
            )
        depth = request.parent.depth + 1
        if depth > self.max_depth:
            why = (
                "delegation is turned off"
                if self.max_depth == 0
                else f"this agent is already a subagent at depth {depth - 1}"
            )
            raise SubagentError(
                f"subagent depth {depth} exceeds max_depth {self.max_depth} (the subagent service's config): "
                f"{why}; do the task here instead of delegating it",
                code="DEPTH_LIMIT",
            )
        async with provider.start(request) as run:
            yield run


SUBAGENTS = ServiceKey[SubagentView]("subagents")


def _apply(ctx: Context, config: SubagentConfig) -> None:
    ctx.provide(SUBAGENTS, SubagentRegistry(config.max_depth))


plugin = Plugin(
    name="subagent",
    apply=_apply,
    config=SubagentConfig,
    provides=(SUBAGENTS,),
    description="the subagent service: providers of child agents, their lifecycle events and the depth limit",
)
