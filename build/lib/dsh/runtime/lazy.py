"""Packages whose public names load on first use: `lazy_attributes` makes the module `__getattr__` that imports a
name's submodule when the name is first read (so `dsh --help` or an inert pytest plugin imports nothing it does not
use). Standard library only, since every lazy package imports it at start-up."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs `dsh sessions list` more than the rest of its imports
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], object]:
    """The `__getattr__` of `package`: `table` maps each public name to its submodule (`"._store"`); a name read
    once is kept in `namespace` (the package's globals), so later reads are plain attribute lookups."""

    def __getattr__(name: str) -> object:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(__import__(package + module, fromlist=[name]), name)
        namespace[name] = value
        return value

    return __getattr__
