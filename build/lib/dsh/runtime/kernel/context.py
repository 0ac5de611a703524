"""The plugin host: `Context` loads plugins, holds services and listeners, and scopes registrations.

Each loaded plugin gets a child context whose registrations land on its own effect stack, so unloading it undoes
all of them in reverse order. `ctx.scoped(key)` makes a child whose registrations shadow the global layer for that
scope and its descendants only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import msgspec

from .config import Deployment, decode_plugin_config
from .effects import Disposer, EffectStack
from .errors import (
    DshError,
    DuplicatePluginError,
    ListenerError,
    MissingServiceError,
    PluginLoadError,
    ServiceConflictError,
    ServiceNotFoundError,
)
from .events import Emit, Waterfall
from .plugin import Plugin, declared_providers
from .services import Bindable, ServiceKey

__all__ = ["Context", "ListenerFailure", "LoadedPlugin", "Scope", "load_deployment_into"]

log = logging.getLogger("dsh.kernel")

T = TypeVar("T")
V = TypeVar("V")
C = TypeVar("C", bound=msgspec.Struct)


class Scope:
    """A node in the scope tree (an agent, a subagent...). Compared by identity."""

    __slots__ = ("key", "parent")

    def __init__(self, key: str, parent: Scope | None) -> None:
        self.key = key
        self.parent = parent

    def chain(self) -> Iterator[Scope]:
        """This scope, then its ancestors, nearest first."""
        scope: Scope | None = self
        while scope is not None:
            yield scope
            scope = scope.parent

    @property
    def path(self) -> str:
        return "/".join(reversed([s.key for s in self.chain()]))

    def __repr__(self) -> str:
        return f"Scope({self.path!r})"


def _visible(owner: Scope | None, viewer: Scope | None) -> bool:
    """A registration made in scope `owner` is visible from `viewer` if it is global or on viewer's chain."""
    return owner is None or (viewer is not None and any(s is owner for s in viewer.chain()))


@dataclass(frozen=True)
class ListenerFailure:
    """What `emit` reports when a listener raises: the event, the listener's plugin and the exception."""

    event: str
    plugin: str
    error: Exception


@dataclass(frozen=True, eq=False)
class _Listener:
    fn: Callable[..., Awaitable[Any]]
    plugin: str
    scope: Scope | None


@dataclass(frozen=True, eq=False)
class _Provision:
    service: object
    plugin: str


class _Host:
    """State shared by every context of one plugin tree."""

    def __init__(self, on_listener_error: Callable[[ListenerFailure], None] | None) -> None:
        # scope (None = global) -> service key -> provision
        self.services: dict[Scope | None, dict[ServiceKey[Any], _Provision]] = {}
        self.listeners: dict[str, list[_Listener]] = {}
        self.plugins: dict[tuple[Scope | None, str], LoadedPlugin[Any]] = {}
        self.on_listener_error = on_listener_error or _log_failure


def _run_now(coroutine: Awaitable[Any], event: str) -> None:
    """Drive a listener's coroutine to its end without an event loop; refuse (and close) one that suspends."""
    if not isinstance(coroutine, Coroutine):
        raise TypeError(f'a listener of "{event}" must be an async function')
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise RuntimeError(
        f'a listener of "{event}" suspended; this event is fired synchronously (inside a registration or a '
        "disposer), so its listeners must not await anything that suspends"
    )


def _log_failure(failure: ListenerFailure) -> None:
    log.error(
        'listener of plugin "%s" failed on event "%s"',
        failure.plugin,
        failure.event,
        exc_info=failure.error,
    )


class Context:
    """The plugin host as one plugin (or the root, or a scope) sees it."""

    __slots__ = ("_effects", "_host", "plugin_id", "scope")

    def __init__(self, *, on_listener_error: Callable[[ListenerFailure], None] | None = None) -> None:
        self._host = _Host(on_listener_error)
        self._effects = EffectStack("root")
        self.scope: Scope | None = None
        self.plugin_id = "root"

    def _child(self, *, scope: Scope | None, effects: EffectStack, plugin_id: str) -> Context:
        child = object.__new__(Context)
        child._host = self._host
        child._effects = effects
        child.scope = scope
        child.plugin_id = plugin_id
        return child

    # -- effects -------------------------------------------------------------------------------------------

    def effect(self, undo: Callable[[], None]) -> Disposer:
        """Record an undo action on this context's owner; it runs when the owner is disposed, or earlier if called."""
        return self._effects.push(undo)

    @property
    def disposed(self) -> bool:
        return self._effects.closed

    def dispose(self) -> None:
        """Undo everything registered through this context (a plugin's, a scope's), last first."""
        self._effects.close()

    # -- scopes --------------------------------------------------------------------------------------------

    def scoped(self, key: str) -> Context:
        """A child context whose registrations shadow the global layer for scope `key` and its descendants.

        Disposing it (or the owner of this context) undoes its registrations.
        """
        scope = Scope(key, self.scope)
        effects = EffectStack(f"scope {scope.path}")
        effects_disposer = self._effects.push(effects.close)
        child = self._child(scope=scope, effects=effects, plugin_id=self.plugin_id)
        # Disposing the scope directly also drops its entry from the owner's stack.
        effects.push(effects_disposer)
        return child

    # -- services ------------------------------------------------------------------------------------------

    def provide(self, key: ServiceKey[T], service: T | Bindable[T]) -> Disposer:
        """Provide `service` under `key` in this context's layer (global, or its scope)."""
        layer = self._host.services.setdefault(self.scope, {})
        if key in layer:
            raise ServiceConflictError(plugin=self.plugin_id, service=key.name, provider=layer[key].plugin)
        provision = _Provision(service, self.plugin_id)
        layer[key] = provision

        def undo() -> None:
            if layer.get(key) is provision:
                del layer[key]
            if not layer:
                self._host.services.pop(self.scope, None)

        return self._effects.push(undo)

    def _lookup(self, key: ServiceKey[Any]) -> _Provision | None:
        scopes: list[Scope | None] = list(self.scope.chain()) if self.scope else []
        scopes.append(None)
        for scope in scopes:
            provision = self._host.services.get(scope, {}).get(key)
            if provision is not None:
                return provision
        return None

    def has(self, key: ServiceKey[Any]) -> bool:
        return self._lookup(key) is not None

    def get(self, key: ServiceKey[T]) -> T:
        """The service under `key`, nearest scope first; a service with `bind_context` is bound to this context."""
        provision = self._lookup(key)
        if provision is None:
            raise ServiceNotFoundError(service=key.name, provided=self.provided_services())
        service = provision.service
        bind = getattr(service, "bind_context", None)
        return cast(T, bind(self) if bind is not None else service)

    def provided_services(self) -> list[str]:
        names = {
            key.name
            for scope, layer in self._host.services.items()
            if _visible(scope, self.scope)
            for key in layer
        }
        return sorted(names)

    # -- events --------------------------------------------------------------------------------------------

    def on(self, event: Emit[Any] | Waterfall[Any, Any], listener: Callable[..., Awaitable[Any]]) -> Disposer:
        """Listen to `event` from this context's scope (global listeners hear every scope)."""
        entry = _Listener(listener, self.plugin_id, self.scope)
        listeners = self._host.listeners.setdefault(event.name, [])
        listeners.append(entry)

        def undo() -> None:
            for i, existing in enumerate(listeners):
                if existing is entry:
                    del listeners[i]
                    break
            if not listeners:
                self._host.listeners.pop(event.name, None)

        return self._effects.push(undo)

    def _listeners(self, name: str) -> list[_Listener]:
        entries = self._host.listeners.get(name)
        if not entries:
            return []
        return [entry for entry in entries if _visible(entry.scope, self.scope)]

    async def emit(self, event: Emit[Any], *args: Any) -> None:
        """Call every listener in registration order; a listener's exception is reported and later ones still run."""
        for entry in self._listeners(event.name):
            try:
                await entry.fn(*args)
            except Exception as error:
                # Contained by design: one faulty listener must not silence the others. It is reported.
                self._host.on_listener_error(ListenerFailure(event.name, entry.plugin, error))

    def emit_now(self, event: Emit[Any], *args: Any, contain: bool = True) -> None:
        """Call every listener without awaiting: for events fired inside a synchronous registration or disposer.

        Each listener must finish without suspending; one that suspends is closed and counts as failed. With
        `contain` (the default) a failure is reported as `emit` reports it and later listeners still run. Without
        it, the first failure propagates as ListenerError and later listeners do not run: for an event fired at
        registration, whose failure rolls the registration back.
        """
        for entry in self._listeners(event.name):
            try:
                _run_now(entry.fn(*args), event.name)
            except Exception as error:
                if not contain:
                    raise ListenerError(plugin=entry.plugin, event=event.name, error=error) from error
                # Contained by design, as in `emit`: a disposer's event must reach every listener.
                self._host.on_listener_error(ListenerFailure(event.name, entry.plugin, error))

    async def waterfall(self, event: Waterfall[V, Any], value: V, *args: Any) -> V:
        """Thread `value` through the listeners as middleware; a listener's exception propagates as ListenerError."""
        chain = self._listeners(event.name)
        if not chain:  # the common case on hot paths (a prompt assembly per step): no chain to build
            return value

        async def run(index: int, current: V) -> V:
            if index == len(chain):
                return current
            entry = chain[index]

            async def next_(new_value: V) -> V:
                return await run(index + 1, new_value)

            try:
                return cast(V, await entry.fn(current, *args, next_))
            except ListenerError:
                raise
            except Exception as error:
                raise ListenerError(plugin=entry.plugin, event=event.name, error=error) from error

        return await run(0, value)

    # -- plugins -------------------------------------------------------------------------------------------

    def plugin(self, plugin: Plugin[C], config: object = None, *, id: str | None = None) -> LoadedPlugin[C]:
        """Load `plugin` with `config` (a mapping, a Struct, or None for defaults) as a child of this context.

        Everything is checked before `apply` runs; a failure in `apply` disposes whatever it registered.
        """
        plugin_id = id or plugin.name
        key = (self.scope, plugin_id)
        if key in self._host.plugins:
            raise DuplicatePluginError(plugin=plugin_id)
        decoded = decode_plugin_config(plugin.config, config, plugin=plugin_id)
        for need in plugin.needs:
            if not self.has(need):
                raise MissingServiceError(
                    plugin=plugin_id, service=need.name, candidates=declared_providers(need.name)
                )
        layer = self._host.services.get(self.scope, {})
        for provided in plugin.provides:
            if provided in layer:
                raise ServiceConflictError(
                    plugin=plugin_id, service=provided.name, provider=layer[provided].plugin
                )

        effects = EffectStack(plugin_id)
        child = self._child(scope=self.scope, effects=effects, plugin_id=plugin_id)
        loaded = LoadedPlugin(plugin_id, plugin, decoded, child, self)
        self._host.plugins[key] = loaded

        def forget() -> None:
            if self._host.plugins.get(key) is loaded:
                del self._host.plugins[key]

        effects.push(forget)
        parent_entry = self._effects.push(effects.close)
        effects.push(parent_entry)
        try:
            plugin.apply(child, decoded)
            own = self._host.services.get(self.scope, {})
            for provided in plugin.provides:
                if provided not in own or own[provided].plugin != plugin_id:
                    raise PluginLoadError(
                        f'plugin "{plugin_id}" declares it provides "{provided.name}" but its apply did not '
                        "provide it",
                        plugin=plugin_id,
                    )
        except BaseException as error:
            effects.close()
            if isinstance(error, DshError) or not isinstance(error, Exception):
                raise
            raise PluginLoadError(
                f'plugin "{plugin_id}" failed to apply: {type(error).__name__}: {error}', plugin=plugin_id
            ) from error
        return loaded

    def loaded_plugins(self) -> list[LoadedPlugin[Any]]:
        """Plugins loaded in this context's layer, in load order."""
        return [p for (scope, _), p in self._host.plugins.items() if scope is self.scope]

    def describe(self) -> Mapping[str, object]:
        """A plain snapshot of every registry of the host: plugins, services and listeners, with their owners."""
        return {
            "plugins": sorted(f"{scope.path if scope else ''}:{pid}" for scope, pid in self._host.plugins),
            "services": sorted(
                (scope.path if scope else "", key.name, provision.plugin)
                for scope, layer in self._host.services.items()
                for key, provision in layer.items()
            ),
            "listeners": {
                name: [(entry.plugin, entry.scope.path if entry.scope else "") for entry in entries]
                for name, entries in sorted(self._host.listeners.items())
            },
        }


class LoadedPlugin(Generic[C]):
    """A plugin instance in a context; `unload()` undoes everything it registered."""

    __slots__ = ("config", "ctx", "id", "parent", "plugin")

    def __init__(self, id: str, plugin: Plugin[C], config: C, ctx: Context, parent: Context) -> None:
        self.id = id
        self.plugin = plugin
        self.config = config
        self.ctx = ctx
        self.parent = parent

    @property
    def loaded(self) -> bool:
        return not self.ctx.disposed

    def unload(self) -> None:
        self.ctx.dispose()

    def reload(self, config: object = None) -> LoadedPlugin[C]:
        """Unload, then load again with `config`; if that fails, the previous config is loaded back and the
        error raised."""
        previous = self.config
        self.unload()
        try:
            return self.parent.plugin(self.plugin, config, id=self.id)
        except Exception:
            self.parent.plugin(self.plugin, previous, id=self.id)
            raise

    def __repr__(self) -> str:
        return f"LoadedPlugin({self.id!r})"


def load_deployment_into(ctx: Context, deployment: Deployment) -> list[LoadedPlugin[Any]]:
    """Load every plugin of a checked deployment in order; if one fails, the ones loaded before it are unloaded."""
    loaded: list[LoadedPlugin[Any]] = []
    try:
        for entry in deployment.plugins:
            loaded.append(ctx.plugin(entry.plugin, entry.config, id=entry.id))
    except BaseException:
        for plugin in reversed(loaded):
            plugin.unload()
        raise
    return loaded
