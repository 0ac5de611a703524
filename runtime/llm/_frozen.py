"""Read-only JSON values for tool parameters: a tool's schema is frozen once, when its `ToolSchema` is built, and then
shared by every assembly instead of copied per step. Anything that tries to change one in place fails loudly.

The frozen forms are `dict` and `list` subclasses, so msgspec and `json` encode them to the very bytes the plain
values give (the request body and the logged `request/header` do not change) and `msgspec.to_builtins` returns
plain values. `copy.deepcopy` (and `dict.copy`, `list.copy`) give plain, editable copies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

from ._errors import ReadOnlyToolSchemaError, ToolSchemaError

__all__ = ["freeze_parameters", "thaw"]


def _refuse(value: _FrozenDict | _FrozenList, operation: str) -> NoReturn:
    raise ReadOnlyToolSchemaError(
        f'tool "{value._tool}" parameters are shared read-only by every prompt assembly: {operation} cannot change '
        "them in place; put a new schema in its place instead (msgspec.structs.replace(schema, parameters=...), "
        "starting from copy.deepcopy(schema.parameters), an editable copy)",
        tool=value._tool,
        operation=operation,
    )


class _FrozenDict(dict[str, Any]):
    """A JSON object of a tool's parameters: readable as a dict, never changed."""

    __slots__ = ("_tool",)
    _tool: str

    def __setitem__(self, key: str, value: Any) -> NoReturn:
        _refuse(self, "__setitem__")

    def __delitem__(self, key: str) -> NoReturn:
        _refuse(self, "__delitem__")

    def __ior__(self, other: object) -> NoReturn:  # type: ignore[misc]  # refusing is the point
        _refuse(self, "|=")

    def clear(self) -> NoReturn:
        _refuse(self, "clear")

    def pop(self, *args: Any) -> NoReturn:
        _refuse(self, "pop")

    def popitem(self) -> NoReturn:
        _refuse(self, "popitem")

    def setdefault(self, *args: Any) -> NoReturn:
        _refuse(self, "setdefault")

    def update(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self, "update")

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]  # a dict thaws to a dict

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_dict, (dict(self), self._tool))


class _FrozenList(list[Any]):
    """A JSON array of a tool's parameters: readable as a list, never changed."""

    __slots__ = ("_tool",)
    _tool: str

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        _refuse(self, "__setitem__")

    def __delitem__(self, index: Any) -> NoReturn:
        _refuse(self, "__delitem__")

    def __iadd__(self, other: Iterable[Any]) -> NoReturn:  # type: ignore[misc]  # refusing is the point
        _refuse(self, "+=")

    def __imul__(self, count: Any) -> NoReturn:  # type: ignore[misc]  # refusing is the point
        _refuse(self, "*=")

    def append(self, value: Any) -> NoReturn:
        _refuse(self, "append")

    def extend(self, values: Iterable[Any]) -> NoReturn:
        _refuse(self, "extend")

    def insert(self, index: Any, value: Any) -> NoReturn:
        _refuse(self, "insert")

    def pop(self, *args: Any) -> NoReturn:
        _refuse(self, "pop")

    def remove(self, value: Any) -> NoReturn:
        _refuse(self, "remove")

    def clear(self) -> NoReturn:
        _refuse(self, "clear")

    def sort(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self, "sort")

    def reverse(self) -> NoReturn:
        _refuse(self, "reverse")

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]  # a list thaws to a list

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_list, (list(self), self._tool))


def _rebuild_dict(items: dict[str, Any], tool: str) -> _FrozenDict:
    frozen = _FrozenDict(items)  # dict.__init__ fills it without calling __setitem__
    frozen._tool = tool
    return frozen


def _rebuild_list(items: list[Any], tool: str) -> _FrozenList:
    frozen = _FrozenList(items)
    frozen._tool = tool
    return frozen


class _NotJson(Exception):
    """Raised inside `_freeze` at the first value that is not JSON-shaped; `path` is filled in as it unwinds (built
    only on this path, so freezing a good schema builds no path strings)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str] = []


def _freeze(value: Any, tool: str) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if kind is dict or isinstance(value, Mapping):
        items: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str and not isinstance(key, str):
                raise _NotJson(f"an object key of type {type(key).__name__} ({key!r}), not str")
            try:
                items[key] = _freeze(item, tool)
            except _NotJson as error:
                error.path.append(f".{key}")
                raise
        return _rebuild_dict(items, tool)
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        entries: list[Any] = []
        for index, item in enumerate(value):
            try:
                entries.append(_freeze(item, tool))
            except _NotJson as error:
                error.path.append(f"[{index}]")
                raise
        return _rebuild_list(entries, tool)
    if isinstance(value, str | int | float):  # subclasses (a str enum member): JSON scalars all the same
        return value
    raise _NotJson(f"a value of type {type(value).__name__}")


def freeze_parameters(parameters: Mapping[str, Any], tool: str) -> dict[str, Any]:
    """A read-only deep copy of `parameters` (already frozen for this tool: returned as is); raises `ToolSchemaError`
    naming `tool` and the path of the first value that is not JSON-shaped."""
    if type(parameters) is _FrozenDict and parameters._tool == tool:
        return parameters
    if not isinstance(parameters, Mapping):
        raise ToolSchemaError(
            f'tool "{tool}" parameters must be a JSON object (a JSON Schema), got {type(parameters).__name__}',
            tool=tool,
            path="$",
        )
    try:
        frozen: _FrozenDict = _freeze(parameters, tool)
    except _NotJson as error:
        path = "$" + "".join(reversed(error.path))
        raise ToolSchemaError(
            f'tool "{tool}" parameters must be JSON-shaped (objects, arrays, strings, numbers, booleans, null): '
            f"at {path}, {error.problem}",
            tool=tool,
            path=path,
        ) from None
    return frozen


def thaw(value: Any) -> Any:
    """A plain, editable deep copy of a JSON value (frozen or not)."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value
