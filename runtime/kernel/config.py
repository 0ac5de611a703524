"""Deployment config: the YAML file that lists plugins `{id, use, config}`, and strict decoding of plugin configs;
`load_yaml`, the bounded YAML reader every dsh YAML file goes through (aliases cannot expand past a limit).

Everything here fails before any plugin's `apply` runs, with the plugin, the key path and what was expected.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
import stat
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import yaml

from .errors import ConfigError, ConfigErrors, MissingServiceError, ServiceConflictError
from .plugin import Plugin, declared_providers
from .services import ServiceKey

__all__ = [
    "YAML_MAX_DEPTH",
    "YAML_MAX_NODES",
    "Deployment",
    "PluginEntry",
    "YamlLimitError",
    "check_needs",
    "decode_plugin_config",
    "load_deployment",
    "load_yaml",
    "PLUGIN_GROUP",
    "plugin_names",
    "plugin_target",
    "resolve_plugin",
]

S = TypeVar("S", bound=msgspec.Struct)

_ENV_REF = re.compile(r"\$\{([^}]*)\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MSGSPEC_PATH = re.compile(r" - at `(\$[^`]*)`$")
_UNKNOWN_FIELD = re.compile(r"^Object contains unknown field `([^`]*)`$")
_PATH_PART = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[\d+\]")


class _EntryDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: str
    use: str
    config: dict[str, Any] = msgspec.field(default_factory=dict)


class _DeploymentDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    plugins: tuple[_EntryDoc, ...]
    model: str | None = None
    provider: str | None = None


@dataclass(frozen=True)
class PluginEntry:
    """One checked plugin of a deployment: its id, `use` path, the resolved Plugin, its decoded config and the
    line where the entry starts in the file."""

    id: str
    use: str
    plugin: Plugin[Any]
    config: msgspec.Struct
    line: int | None


@dataclass(frozen=True)
class Deployment:
    """A checked deployment file: defaults for agents (`model`, `provider`) and the plugins to load, in order."""

    path: str
    plugins: tuple[PluginEntry, ...]
    model: str | None = None
    provider: str | None = None


def decode_plugin_config(config_type: type[S], raw: object, *, plugin: str) -> S:
    """Decode `raw` (None, a mapping or an instance) into `config_type` strictly, naming the plugin on failure (an
    unknown key with the valid ones and the nearest)."""
    if isinstance(raw, config_type):
        return raw
    try:
        return msgspec.convert({} if raw is None else raw, type=config_type, strict=True)
    except msgspec.ValidationError as error:
        message, path = _split_msgspec_error(str(error))
        raise ConfigError(_with_valid_keys(message, config_type, path), plugin=plugin, path=path) from error


def _struct_at(root: type[Any], path: str) -> type[msgspec.Struct] | None:
    """The Struct type found at `path` (`$.a[0].b`) below `root`, walking fields, sequences and optionals."""
    from msgspec import inspect

    info: Any = inspect.type_info(root)
    for part in _PATH_PART.finditer(path.removeprefix("$")):
        while isinstance(info, inspect.UnionType):
            structs = [t for t in info.types if not isinstance(t, inspect.NoneType)]
            if len(structs) != 1:
                return None
            info = structs[0]
        name = part.group(1)
        if name is None:  # [i]: the element of a sequence
            if not isinstance(info, inspect.ListType | inspect.TupleType | inspect.VarTupleType):
                return None
            info = info.item_type if not isinstance(info, inspect.TupleType) else None
            if info is None:
                return None
        elif isinstance(info, inspect.StructType):
            field = next((f for f in info.fields if f.encode_name == name or f.name == name), None)
            if field is None:
                return None
            info = field.type
        elif isinstance(info, inspect.DictType):
            info = info.value_type
        else:
            return None
    while isinstance(info, inspect.UnionType):
        structs = [t for t in info.types if isinstance(t, inspect.StructType)]
        if len(structs) != 1:
            return None
        info = structs[0]
    return info.cls if isinstance(info, inspect.StructType) else None


def _valid_keys(struct: type[msgspec.Struct]) -> list[str]:
    return list(struct.__struct_encode_fields__)


def _with_valid_keys(message: str, root: type[Any], path: str) -> str:
    """msgspec's "unknown field" message, with the keys that are valid there and the nearest one."""
    unknown = _UNKNOWN_FIELD.match(message)
    struct = _struct_at(root, path) if unknown else None
    if unknown is None or struct is None:
        return message
    return _unknown_key(unknown.group(1), _valid_keys(struct))


def _unknown_key(key: str, valid: list[str]) -> str:
    nearest = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f" (did you mean `{nearest[0]}`?)" if nearest else ""
    return f"unknown key `{key}`{hint}; valid keys: {', '.join(valid) or 'none'}"


def _split_msgspec_error(text: str) -> tuple[str, str]:
    """msgspec says "Expected `int`, got `str` - at `$.a.b`"; keep the message and the path apart."""
    match = _MSGSPEC_PATH.search(text)
    if match is None:
        return text, "$"
    return text[: match.start()], match.group(1)


def _interpolate_env(value: object, *, plugin: str, path: str, env: Mapping[str, str]) -> object:
    """Replace `${NAME}` and `${NAME:-default}` in every string of `value`; an unset NAME is an error."""
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, sep, default = match.group(1).partition(":-")
            if not _ENV_NAME.fullmatch(name):
                raise ConfigError(
                    f'"${{{match.group(1)}}}" is not a valid environment reference; write ${{NAME}} or '
                    "${NAME:-default}",
                    plugin=plugin,
                    path=path,
                )
            if name in env:
                return env[name]
            if sep:
                return default
            raise ConfigError(
                f"environment variable {name} is not set (referenced as ${{{name}}}); set it, or write "
                f"${{{name}:-default}}",
                plugin=plugin,
                path=path,
            )

        return _ENV_REF.sub(substitute, value)
    if isinstance(value, dict):
        return {k: _interpolate_env(v, plugin=plugin, path=f"{path}.{k}", env=env) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate_env(v, plugin=plugin, path=f"{path}[{i}]", env=env) for i, v in enumerate(value)]
    return value


PLUGIN_GROUP = "dsh.plugins"
"""The entry-point group that names plugins for deployments: `use: tool_fs` is the entry `tool_fs` in it. dsh
registers its own there, and a third-party package adds its plugins the same way."""

_OLD_PREFIXES = ("runtime.", "plugins.", "replay.")
"""How deployments named dsh's modules before the one `dsh` namespace; such a `use:` is refused with the new name."""


def plugin_names() -> dict[str, str]:
    """Every short plugin name installed, with the `module:attribute` it stands for."""
    from importlib.metadata import (
        entry_points,
    )  # only a deployment that names a short plugin pays for the scan

    return {entry.name: entry.value for entry in entry_points(group=PLUGIN_GROUP)}


def _top_level_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a name no finder accepts is no module
        return False


def plugin_target(use: str, *, plugin: str = "") -> str:
    """The `module:attribute` that `use` names: a short name from the `dsh.plugins` entry points (or, if none has
    that name, a top-level module's `plugin`), a dotted module (its `plugin` attribute) or `module:attribute`.
    Nothing is imported here (a top-level name's package is only looked up)."""
    module, colon, attribute = use.partition(":")
    if (
        not use
        or use != use.strip()
        or any(part == "" for part in module.split("."))
        or (colon and not attribute.isidentifier())
    ):
        raise ConfigError(
            f"`use: {use!r}` is not a plugin name; write a short name such as `tool_fs`, a module such as "
            '"package.module" or "package.module:attribute"',
            plugin=plugin,
            path="$.use",
        )
    if use.startswith(_OLD_PREFIXES):
        module, _, attribute = use.partition(":")
        new = f"dsh.{module}" + (f":{attribute}" if attribute else "")
        short = [
            name for name, value in plugin_names().items() if value == f"dsh.{module}:{attribute or 'plugin'}"
        ]
        instead = f"`use: {short[0]}` (or `use: {new}`)" if short else f"`use: {new}`"
        raise ConfigError(
            f"`use: {use}` is the name dsh's modules had before they moved under the `dsh` package; write {instead}",
            plugin=plugin,
            path="$.use",
        )
    if "." in use or ":" in use:
        return use if ":" in use else f"{use}:plugin"
    names = plugin_names()
    if use not in names and _top_level_module(use):
        return f"{use}:plugin"  # a project's own top-level module, as in `use: shopagent`
    if use not in names:
        close = difflib.get_close_matches(use, names, n=1)
        hint = f'did you mean "{close[0]}"? ' if close else ""
        raise ConfigError(
            f"`use: {use}` is not an installed plugin name; {hint}installed: {', '.join(sorted(names)) or 'none'} "
            '(or name a module: "package.module" or "package.module:attribute")',
            plugin=plugin,
            path="$.use",
        )
    return names[use]


def _binds(statements: list[Any], name: str) -> bool:
    """Whether module-level `statements` may bind `name`: an assignment, import, def or class of it (inside a
    top-level `if`/`try`/`with` too), a star import or a module `__getattr__` (which may provide any name)."""
    import ast

    for node in statements:
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(sub, ast.Name) and sub.id == name for t in targets for sub in ast.walk(t)):
                return True
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*" or (alias.asname or alias.name.partition(".")[0]) == name:
                    return True
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name in (name, "__getattr__"):
                return True
        elif isinstance(node, ast.If | ast.Try | ast.With):
            blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
            blocks += [handler.body for handler in getattr(node, "handlers", [])]
            if any(_binds(block, name) for block in blocks):
                return True
    return False


def _check_declares(use: str, module_name: str, attribute: str, *, plugin: str) -> None:
    """Refuse, before importing anything of it, a module that cannot hold the plugin `use` names: none by that name
    (`importlib.util.find_spec`), a built-in one, or one whose source binds no `attribute` (`use: this` is refused
    without printing the Zen of Python). A module without source to read is left to the import."""
    import importlib.util

    def refuse(why: str) -> ConfigError:
        return ConfigError(
            f'`use: {use}` {why}; expected a short plugin name, "package.module" or "package.module:attribute" '
            "naming a Plugin value",
            plugin=plugin,
            path="$.use",
        )

    try:
        spec = importlib.util.find_spec(
            module_name
        )  # a dotted name's parent packages are imported, as they must be
    except (ImportError, ValueError) as error:
        raise refuse(f"names no module ({error})") from None
    except Exception as error:  # a parent package that fails to import
        raise refuse(f"does not import: {type(error).__name__}: {error}") from None
    if spec is None:
        raise refuse(f"does not import: no module named {module_name}")
    if spec.origin in ("built-in", "frozen") or (spec.origin is None and not spec.submodule_search_locations):
        raise refuse(f"names {module_name}, a module built into Python, which holds no dsh plugin")
    if spec.origin is None:  # a namespace package: no code of its own
        raise refuse(f"names {module_name}, a namespace package with no `{attribute}`")
    if not spec.origin.endswith(".py"):
        return  # compiled: nothing to read before importing it
    import ast

    try:
        source = Path(spec.origin).read_bytes()
        tree = ast.parse(source, filename=spec.origin)
    except (OSError, SyntaxError, ValueError) as error:
        raise refuse(f"names {module_name}, whose source {spec.origin} does not parse: {error}") from None
    if not _binds(tree.body, attribute):
        raise refuse(f"names {module_name} ({spec.origin}), which defines no `{attribute}`")


def resolve_plugin(use: str, *, plugin: str = "") -> Plugin[Any]:
    """The `Plugin` that `use` names (see `plugin_target`), imported and checked to be one. The module is first
    looked up and its source read (`_check_declares`), so a module that cannot hold the plugin never runs; what a
    plugin module prints while it is imported goes to stderr (stdout may be a protocol's, as `dsh acp`'s is)."""
    import contextlib

    target = plugin_target(use, plugin=plugin)
    module_name, _, attribute = target.partition(":")
    _check_declares(use, module_name, attribute, plugin=plugin)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(
            f'`use: {use}` does not import: {error}; expected a short plugin name, "package.module" or '
            '"package.module:attribute"',
            plugin=plugin,
            path="$.use",
        ) from error
    except Exception as error:  # the module's own code failed: its error, named, is the config's problem
        raise ConfigError(
            f"`use: {use}`: importing {module_name} raised {type(error).__name__}: {error}",
            plugin=plugin,
            path="$.use",
        ) from error
    value = getattr(module, attribute, None)
    if not isinstance(value, Plugin):
        found = "nothing" if value is None else type(value).__name__
        raise ConfigError(
            f"`use: {use}` must name a Plugin value, but {module_name}.{attribute} is {found}",
            plugin=plugin,
            path="$.use",
        )
    return value


YAML_MAX_NODES = 100_000
"""The most nodes a YAML document may hold once its aliases are expanded (a deployment holds a few hundred)."""
YAML_MAX_DEPTH = 100
"""The deepest nesting a YAML document may reach once its aliases are expanded."""


class YamlLimitError(yaml.composer.ComposerError):
    """A YAML document refused before it is constructed: a recursive anchor, or aliases expanding past
    `YAML_MAX_NODES` nodes or `YAML_MAX_DEPTH` levels (a "billion laughs" bomb). `problem_mark` is where."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expansion(root: yaml.Node) -> None:
    """Measure the tree `root` stands for, sharing aliased nodes as the composer does (linear in the distinct nodes),
    and refuse a cycle or a tree past the limits before anything walks it expanded."""
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, expanded depth)
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in measured:
            continue
        kids = _children(node)
        if not done:
            if key in open_:
                raise YamlLimitError(
                    problem="found a recursive anchor (an alias inside the node it names); YAML for dsh is a tree",
                    problem_mark=node.start_mark,
                )
            open_.add(key)
            stack.append((node, True))
            stack.extend((kid, False) for kid in kids if id(kid) not in measured)
            continue
        open_.discard(key)
        size = 1 + sum(measured[id(kid)][0] for kid in kids)
        depth = 1 + max((measured[id(kid)][1] for kid in kids), default=0)
        if size > YAML_MAX_NODES or depth > YAML_MAX_DEPTH:
            what = f"{size} nodes" if size > YAML_MAX_NODES else f"{depth} levels deep"
            limit = f"{YAML_MAX_NODES} nodes" if size > YAML_MAX_NODES else f"{YAML_MAX_DEPTH} levels"
            raise YamlLimitError(
                problem=f"this node expands to {what} through its aliases (the limit is {limit}); "
                "refused before expansion",
                problem_mark=node.start_mark,
            )
        measured[key] = (size, depth)


class _BoundedLoader(yaml.SafeLoader):
    """A safe loader that refuses, after composing and before constructing, what would expand past the limits."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        # composition recurses once per level: bound it before the interpreter's stack does
        self._levels = getattr(self, "_levels", 0) + 1
        try:
            if self._levels > YAML_MAX_DEPTH:
                raise YamlLimitError(
                    problem=f"the document nests deeper than {YAML_MAX_DEPTH} levels",
                    problem_mark=self.peek_event().start_mark,  # type: ignore[no-untyped-call]  # PyYAML's stubs
                )
            return super().compose_node(parent, index)
        finally:
            self._levels -= 1

    def compose_document(self) -> yaml.Node | None:
        node = super().compose_document()
        if node is not None:
            _check_expansion(node)
        return node


def load_yaml(text: str, *, name: str = "<string>", loader: type[yaml.SafeLoader] = _BoundedLoader) -> Any:
    """One YAML document, loaded safely and bounded: a recursive anchor or an alias bomb raises `YamlLimitError`
    (a `yaml.YAMLError` whose mark names `name` and the line) before anything is expanded."""
    reader = loader(text)
    reader.name = name
    try:
        return reader.get_single_data()
    finally:
        reader.dispose()


class _LineLoader(_BoundedLoader):
    """A bounded safe loader that remembers the line of each mapping, so plugin entries can be located."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping = loader.construct_mapping(node)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _strip_lines(value: object) -> object:
    if isinstance(value, dict):
        return {k: _strip_lines(v) for k, v in value.items() if k != "__line__"}
    if isinstance(value, list):
        return [_strip_lines(v) for v in value]
    return value


def _key_line(text: str, key: str) -> int | None:
    """The line of a top-level `key:` in the YAML text (None when it is not written at the start of a line)."""
    found = re.search(rf"^{re.escape(key)}\s*:", text, re.MULTILINE)
    return None if found is None else text.count("\n", 0, found.start()) + 1


DEPLOYMENT_MAX_BYTES = 1 << 20
"""The largest deployment file dsh reads (a deployment is a few KiB): `/dev/zero` or a huge file is refused, not
read until memory runs out."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_config_file(path: str | Path, *, max_bytes: int = DEPLOYMENT_MAX_BYTES) -> str:
    """The text of a config file: a regular file (a FIFO, a device, a directory are refused, without waiting on
    them) of at most `max_bytes`, in UTF-8; anything else is a `ConfigError` naming the file and what it is."""
    file = str(path)
    try:
        # O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer (no effect on a regular file)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise ConfigError(f"cannot read the deployment file: {error.strerror}", file=file) from error
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise ConfigError(f"the deployment file is {kind}; expected a regular YAML file", file=file)
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as error:
            raise ConfigError(f"cannot read the deployment file: {error.strerror}", file=file) from error
    if len(data) > max_bytes:
        raise ConfigError(
            f"the deployment file is larger than {max_bytes:,} bytes; a deployment is a short YAML file",
            file=file,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ConfigError(
            f"the deployment file is not UTF-8 text (byte {data[error.start]:#04x} at offset {error.start}); save it "
            "as UTF-8",
            file=file,
            line=line,
        ) from None


def load_deployment(path: str | Path, *, env: Mapping[str, str] | None = None) -> Deployment:
    """Read and validate a deployment file: YAML syntax, its shape, `${ENV}` references, every `use` path and
    every plugin's config. No plugin is applied."""
    file = str(path)
    env = os.environ if env is None else env
    text = read_config_file(path)
    try:
        raw = load_yaml(text, name=file, loader=_LineLoader)  # _LineLoader is a bounded SafeLoader
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error)
        kind = "YAML refused" if isinstance(error, YamlLimitError) else "YAML syntax error"
        raise ConfigError(f"{kind}: {problem}", file=file, line=line) from error
    if not isinstance(raw, dict):
        raise ConfigError("a deployment file must be a mapping with a `plugins` list", file=file, line=1)
    for key in raw:
        if key != "__line__" and key not in _valid_keys(_DeploymentDoc):
            raise ConfigError(
                _unknown_key(str(key), _valid_keys(_DeploymentDoc)),
                file=file,
                path="$",
                line=_key_line(text, str(key)) or raw["__line__"],
            )

    entries = raw.get("plugins")
    if not isinstance(entries, list):
        raise ConfigError(
            "`plugins` must be a list of {id, use, config} entries",
            file=file,
            path="$.plugins",
            line=raw["__line__"],
        )
    lines = [e.get("__line__") if isinstance(e, dict) else None for e in entries]
    try:
        doc = msgspec.convert(_strip_lines(raw), type=_DeploymentDoc, strict=True)
    except msgspec.ValidationError as error:
        message, at = _split_msgspec_error(str(error))
        index = re.match(r"\$\.plugins\[(\d+)\]", at)
        line = lines[int(index.group(1))] if index else raw["__line__"]
        raise ConfigError(
            _with_valid_keys(message, _DeploymentDoc, at), file=file, path=at, line=line
        ) from error

    seen: set[str] = set()
    checked = []
    problems: list[ConfigError] = []  # every entry is checked: all its errors are reported at once
    for entry, line in zip(doc.plugins, lines, strict=True):
        if entry.id in seen:
            problems.append(
                ConfigError(f'plugin id "{entry.id}" is listed twice', file=file, line=line, plugin=entry.id)
            )
            continue
        seen.add(entry.id)
        try:
            plugin = resolve_plugin(entry.use, plugin=entry.id)
            raw_config = _interpolate_env(entry.config, plugin=entry.id, path="$.config", env=env)
            try:
                config = decode_plugin_config(plugin.config, raw_config, plugin=entry.id)
            except ConfigError as error:
                raise ConfigError(error.reason, plugin=entry.id, path="$.config" + error.path[1:]) from error
        except ConfigError as error:
            problems.append(ConfigError(error.reason, plugin=entry.id, path=error.path, file=file, line=line))
            continue
        checked.append(PluginEntry(entry.id, entry.use, plugin, config, line))
    ConfigErrors.raise_all(problems)
    return Deployment(file, tuple(checked), model=doc.model, provider=doc.provider)


# Who provides a host-provided service: the root context, whose plugin id is "root" (as a conflict at load says).
_HOST = "root"


def check_needs(deployment: Deployment, *, host: Collection[ServiceKey[Any]] = ()) -> None:
    """Check, without loading anything, that each plugin's needs are provided by a plugin listed before it or by
    the host, and that no service is provided twice.

    `host` lists the services the host provides on the root context before it loads the deployment (the `dsh`
    command provides the session store): they count as present from the start, and a plugin providing one too is
    a conflict, as it would be at load.
    """
    providers: dict[str, str] = {key.name: _HOST for key in host}
    problems: list[ConfigError] = []  # every plugin is checked: all the errors are reported at once
    for entry in deployment.plugins:
        for need in entry.plugin.needs:
            if need.name not in providers:
                later = [
                    e.id for e in deployment.plugins if any(k.name == need.name for k in e.plugin.provides)
                ]
                error = MissingServiceError(
                    plugin=entry.id, service=need.name, candidates=later or declared_providers(need.name)
                )
                problems.append(
                    ConfigError(str(error), plugin=entry.id, file=deployment.path, line=entry.line)
                )
        for provided in entry.plugin.provides:
            if provided.name in providers:
                conflict = ServiceConflictError(
                    plugin=entry.id, service=provided.name, provider=providers[provided.name]
                )
                problems.append(
                    ConfigError(str(conflict), plugin=entry.id, file=deployment.path, line=entry.line)
                )
            providers[provided.name] = entry.id
    ConfigErrors.raise_all(problems)
