"""The plugin declaration: a plugin is a value, checked by the loader before its `apply` runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from .services import ServiceKey

if TYPE_CHECKING:
    from .context import Context

__all__ = ["NoConfig", "Plugin", "declared_providers"]

C = TypeVar("C", bound=msgspec.Struct)


class NoConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The config of a plugin that takes none: any key is refused."""


# Service name -> names of every plugin declared (imported) so far that provides it; used to say, when a service
# is missing, which plugins could provide it.
_PROVIDERS: dict[str, list[str]] = {}


@dataclass(frozen=True, eq=False)
class Plugin(Generic[C]):
    """`plugin = Plugin(name=..., apply=apply, config=Config, needs=(...), provides=(...))`.

    `apply(ctx, config)` registers everything through `ctx`; unloading runs its disposers in reverse order.
    `config` is a msgspec Struct type decoded strictly (declare it with `forbid_unknown_fields=True`).
    Every service in `provides` must be provided by `apply`; every one in `needs` must be available before it runs.
    """

    name: str
    apply: Callable[[Context, C], None]
    config: type[C] = NoConfig  # type: ignore[assignment]  # the default only fits C = NoConfig
    needs: tuple[ServiceKey[Any], ...] = ()
    provides: tuple[ServiceKey[Any], ...] = ()
    description: str = field(default="")

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a plugin needs a non-empty name")
        for key in self.provides:
            names = _PROVIDERS.setdefault(key.name, [])
            if self.name not in names:
                names.append(self.name)


def declared_providers(service: str) -> tuple[str, ...]:
    """Names of the declared plugins that provide `service`."""
    return tuple(_PROVIDERS.get(service, ()))
