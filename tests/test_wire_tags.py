"""One Struct per wire tag: the session log's event types, and every message, block, source, chunk and reason they
hold, are declared once (in dsh.runtime.session's event table and the dsh.runtime.llm types it uses); no module anywhere in
runtime/, plugins/ or replay/ declares a second Struct for one of their tags."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import msgspec
import msgspec.inspect as mi

from dsh.runtime.session import EVENT_TYPES, Event, SessionHeader

Key = tuple[str, str]

OTHER_FORMATS = {
    "dsh.replay.script._overrides": "override.json, whose `op` tags (replace, patch, ...) are its own vocabulary"
}
"""Modules that declare another file format's tagged Structs: a tag there names no session-log object."""


def _modules() -> list[ModuleType]:
    modules: list[ModuleType] = []
    for root in ("dsh.runtime", "dsh.plugins", "dsh.replay"):
        package = importlib.import_module(root)
        modules.append(package)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{root}."):
            modules.append(importlib.import_module(info.name))
    return modules


def _tagged_structs() -> list[type[msgspec.Struct]]:
    found: list[type[msgspec.Struct]] = []
    for module in _modules():
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, msgspec.Struct)
                and value.__module__ == module.__name__
                and value.__struct_config__.tag_field is not None
            ):
                found.append(value)
    return found


def _key(cls: type[msgspec.Struct]) -> Key:
    config = cls.__struct_config__
    return (str(config.tag_field), str(config.tag))


def _wire_structs() -> dict[Key, type[msgspec.Struct]]:
    """Every tagged Struct reachable from the event table (and the header), by (tag field, tag)."""
    seen: dict[Key, type[msgspec.Struct]] = {}
    stack: list[mi.Type] = list(mi.multi_type_info([*EVENT_TYPES.values(), SessionHeader]))
    visited: set[int] = set()
    while stack:
        info = stack.pop()
        if id(info) in visited:
            continue
        visited.add(id(info))
        if isinstance(info, mi.StructType):
            if info.tag_field is not None:
                other = seen.setdefault((info.tag_field, str(info.tag)), info.cls)
                assert other is info.cls, (
                    f"{other} and {info.cls} share the wire tag {info.tag_field}={info.tag}"
                )
            stack.extend(field.type for field in info.fields)
        else:
            for name in ("types", "item_type", "key_type", "value_type", "item_types"):
                inner = getattr(info, name, None)
                if isinstance(inner, mi.Type):
                    stack.append(inner)
                elif isinstance(inner, tuple):
                    stack.extend(t for t in inner if isinstance(t, mi.Type))
    return seen


def test_the_event_table_holds_one_struct_per_event_tag() -> None:
    assert all(str(cls.__struct_config__.tag) == tag for tag, cls in EVENT_TYPES.items())
    assert len(set(EVENT_TYPES.values())) == len(EVENT_TYPES)


def test_no_module_declares_a_second_struct_for_a_wire_tag() -> None:
    wire = _wire_structs()
    assert {"text", "tool-call", "block-start", "finish", "user", "model"} <= {tag for _, tag in wire}
    events = set(EVENT_TYPES.values())
    duplicates = []
    for cls in _tagged_structs():
        if issubclass(cls, Event) and cls is not Event and cls not in events:
            duplicates.append(f"{cls.__module__}.{cls.__qualname__} (event {_key(cls)[1]})")
        owner = wire.get(_key(cls))
        if owner is not None and owner is not cls and cls.__module__ not in OTHER_FORMATS:
            duplicates.append(f"{cls.__module__}.{cls.__qualname__} re-declares {owner.__qualname__}")
    assert duplicates == []


WIRE_MODULE = "runtime/session/_events.py"
NOT_YET: set[str] = set()
"""Source files still allowed to write a wire tag out as a string."""


def _literals_in(path: Path, tags: set[str]) -> list[str]:
    """Where `path` writes one of `tags` out as a string constant (`"turn/end"`), as `line: 'tag'`."""
    tree = ast.parse(path.read_text(), str(path))
    return [
        f"{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in tags
    ]


def _tag_literals() -> dict[str, list[str]]:
    root = Path(__file__).resolve().parents[1]
    found: dict[str, list[str]] = {}
    for part in ("runtime", "plugins", "replay"):
        for path in sorted((root / part).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            if name != WIRE_MODULE and name not in NOT_YET and (hits := _literals_in(path, set(EVENT_TYPES))):
                found[name] = hits
    return found


def test_a_wire_tag_is_written_out_only_where_its_struct_is_declared() -> None:
    """Adding an event type is one declaration: everywhere else names it by its class (`types=(TurnEnd,)`) or by
    its `TAG`, so no hand-kept list of tag strings has to learn the new one."""
    assert _tag_literals() == {}


def test_the_scan_finds_a_tag_written_out(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""turn/end in prose is no literal."""\n'
        "def ended(event):\n"
        "    return event.type == TurnEnd.TAG or event.type in ('turn/end', 'step/end', 'other')\n"
    )
    assert _literals_in(planted, set(EVENT_TYPES)) == ["3: 'turn/end'", "3: 'step/end'"]
