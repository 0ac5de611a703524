"""Scenarios: `fixtures/<name>/` holds `scenario.yml` (which deployment, a config overlay, the user inputs), the
recorded `session.jsonl` (+ child logs `session.N.jsonl`), optionally `override.json` and a `workspace/` that is
copied into a fresh directory for each run. This module reads them and builds the deployment a run loads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from dsh.runtime.kernel import Deployment, PluginEntry, decode_plugin_config, load_deployment, load_yaml
from dsh.runtime.llm import wire_transport
from dsh.runtime.session import RequestHeader, SessionTitleLlmRequest

from ..recordings._errors import ScriptError
from ..recordings._layout import SCENARIO_FILE
from ..recordings._source import read_log
from ..script._recording import ROOT_LOG
from ._authored import ScriptedConfig, scripted_plugin
from ._hitl import HookMode
from ._plugin import DEFAULT_PROVIDER, ReplayConfig
from ._plugin import plugin as replay_plugin
from ._tools import ToolMode

__all__ = [
    "DEFAULT_DEPLOYMENT",
    "SCENARIO_FILE",
    "Scenario",
    "ScenarioDoc",
    "SteerDoc",
    "Transport",
    "discover",
    "is_live_transport",
    "live_deployment",
    "load_scenario",
    "replay_deployment",
    "scripted_deployment",
    "with_replay",
]

Transport = Literal["chunks", "wire"]
"""How a replay serves the recorded model calls: as chunks in place of the transport, or on the wire to the real one."""

WORKSPACE_DIR = "workspace"
DEFAULT_DEPLOYMENT = Path(__file__).parents[1] / "default-deployment.yml"
TITLES = "titles"
"""The title plugin, by its declared name: a replay loads it only when the recording holds a title call (a title
call the recording never made would have no answer to be served)."""


def _asks_titles(log: Path) -> bool:
    """Whether the recording (the root log of a scenario directory, or a log file) logged a title call."""
    for event, _ in read_log(log / ROOT_LOG if log.is_dir() else log).events():
        if event.type == SessionTitleLlmRequest.TAG:
            return True
    return False


def _replayable(entries: tuple[PluginEntry, ...], log: Path) -> tuple[PluginEntry, ...]:
    """`entries` without the title plugin when the recording made no title call."""
    if not any(entry.plugin.name == TITLES for entry in entries) or _asks_titles(log):
        return entries
    return tuple(entry for entry in entries if entry.plugin.name != TITLES)


class SteerDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Steering typed while turn `turn` runs: queued (`next-step`) when its step `step` logs its model message,
    so it enters the next step (a step that called no tool is followed by one more, for the steering)."""

    turn: int
    step: int
    text: str


class ScenarioDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """`scenario.yml`. `deployment`: a deployment file, relative to the scenario (default: replay's own, every core
    plugin and tool). `overlay`: per plugin id, config keys laid over the deployment's (a persona edit, a tool's
    limits). `inputs`: the user's message of each turn (default: the ones the recording logged). `resume_before`: turns
    before which the agent is closed and its session resumed (default: where the recording was). `model` and
    `provider`: the agent's (default: what the recording's first request header names). `tools`: per tool name, `live`
    or `recorded` in a replay (default: recorded exactly for the tools whose definition is not hermetic, such as
    web_fetch and web_search; see replay/driver/_tools.py). `steer`: steering typed
    during a turn (see `SteerDoc`). `left_queued`: per turn N in `resume_before`, a prompt queued just before the
    agent is closed and left unclaimed (a crash), which the resumed agent's inbox starts turn N with; `inputs` then
    has no entry for turn N. `woken_turns`: turns no user input opens, which the agent's inbox starts (a background
    child's settlement notice); `inputs` has no entry for them either. A re-run of a recording that logged its
    inbox feeds the input as the log has it. `hooks`: `live` (the workspace's hooks run, the default) or `recorded`
    (each hook run is served the recorded outcome); approvals are always decided by the recording. `transport`:
    `chunks` (the recorded chunks stand in for the model transport) or `wire` (they are served as the provider's wire
    format to the deployment's real adapter; see replay/driver/_wire.py); unset: chunks, or wire when the run asks for it
    (`dsh replay --wire`, the `dsh_wire_replay` ini option). `chunks` pins a recording the real adapter cannot send
    (an image held by a reference to another harness's attachment store). `prompt_golden`: keep the third
    golden, the system prompts and tool schemas the run sent (default: the `dsh_prompt_goldens` ini option)."""

    description: str = ""
    deployment: str | None = None
    overlay: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    inputs: list[str] | None = None
    resume_before: list[int] = msgspec.field(default_factory=list)
    model: str | None = None
    provider: str | None = None
    tools: dict[str, ToolMode] = msgspec.field(default_factory=dict)
    steer: list[SteerDoc] = msgspec.field(default_factory=list)
    left_queued: dict[int, str] = msgspec.field(default_factory=dict)
    woken_turns: list[int] = msgspec.field(default_factory=list)
    hooks: HookMode = "live"
    transport: Transport | None = None
    prompt_golden: bool | None = None


@dataclass(frozen=True)
class Scenario:
    """A scenario directory (or a bare log file, which is a scenario with defaults)."""

    name: str
    log: Path
    directory: Path | None
    doc: ScenarioDoc

    @property
    def workspace(self) -> Path | None:
        if self.directory is None:
            return None
        path = self.directory / WORKSPACE_DIR
        return path if path.is_dir() else None

    @property
    def deployment_file(self) -> Path:
        """`deployment` relative to the scenario; when no such file is there, relative to the current directory (a
        project's root, where `dsh replay` runs); default: replay's own."""
        if self.doc.deployment is None or self.directory is None:
            return DEFAULT_DEPLOYMENT
        beside = (self.directory / self.doc.deployment).resolve()
        if beside.exists() or not Path(self.doc.deployment).is_file():
            return beside
        return Path(self.doc.deployment).resolve()


def load_scenario(path: Path) -> Scenario:
    """A scenario directory, or a JSONL log file taken as a scenario with defaults."""
    if path.is_file():
        return Scenario(path.stem, path, None, ScenarioDoc())
    if not path.is_dir():
        raise ScriptError(
            "no such file or directory; expected a JSONL log or a scenario directory", place=str(path)
        )
    doc = ScenarioDoc()
    spec = path / SCENARIO_FILE
    if spec.is_file():
        try:
            doc = msgspec.convert(
                load_yaml(spec.read_text(encoding="utf-8"), name=str(spec)) or {}, ScenarioDoc, strict=True
            )
        except (yaml.YAMLError, msgspec.ValidationError) as error:
            raise ScriptError(f"bad {SCENARIO_FILE}: {error}", place=str(spec)) from None
    return Scenario(path.name, path / ROOT_LOG, path, doc)


def discover(root: Path) -> list[Scenario]:
    """Every scenario directory below `root` (those holding `scenario.yml`), named by their path from `root`."""
    found = []
    for spec in sorted(root.rglob(SCENARIO_FILE)):
        scenario = load_scenario(spec.parent)
        found.append(
            Scenario(spec.parent.relative_to(root).as_posix(), scenario.log, scenario.directory, scenario.doc)
        )
    return found


def _overlaid(entry: PluginEntry, keys: dict[str, Any]) -> PluginEntry:
    raw = {**msgspec.to_builtins(entry.config), **keys}
    config = decode_plugin_config(type(entry.config), raw, plugin=entry.id)
    return PluginEntry(entry.id, entry.use, entry.plugin, config, entry.line)


def live_deployment(scenario: Scenario) -> Deployment:
    """The scenario's deployment with its overlay: what `dsh record` runs against the live model."""
    deployment = load_deployment(scenario.deployment_file)
    unknown = set(scenario.doc.overlay) - {entry.id for entry in deployment.plugins}
    if unknown:
        raise ScriptError(
            f"overlay names plugin ids the deployment does not load: {', '.join(sorted(unknown))}; its ids: "
            + ", ".join(entry.id for entry in deployment.plugins),
            place=str(scenario.directory or scenario.log),
        )
    entries = [
        _overlaid(entry, scenario.doc.overlay[entry.id]) if entry.id in scenario.doc.overlay else entry
        for entry in deployment.plugins
    ]
    return Deployment(deployment.path, tuple(entries), deployment.model, deployment.provider)


def is_live_transport(entry: PluginEntry) -> bool:
    """Whether `entry` loads a live model transport: a plugin that declares a wire transport (dsh.runtime.llm's
    `declare_wire_transport`), which a replay stands in for."""
    return wire_transport(entry.plugin) is not None


def _no_transport(deployment: Deployment, place: object, role: str) -> ScriptError:
    return ScriptError(
        f"the deployment {deployment.path} loads no live model transport (a plugin that declares a wire "
        f"transport, such as llm_openai) for {role}",
        place=str(place),
    )


def _swap_transport(scenario: Scenario | Path, deployment: Deployment, entry: PluginEntry) -> Deployment:
    if not any(is_live_transport(e) for e in deployment.plugins):
        place = scenario if isinstance(scenario, Path) else scenario.directory or scenario.log
        raise _no_transport(deployment, place, "the replay to stand in for")
    swapped = tuple(entry if is_live_transport(e) else e for e in deployment.plugins)
    return Deployment(deployment.path, swapped, deployment.model, deployment.provider)


def scripted_deployment(scenario: Scenario, replies: Path) -> Deployment:
    """The scenario's deployment with the live transport swapped for a hand-written model (`replies.yml`), serving
    the scenario's provider (or the deployment's, or `scripted`)."""
    deployment = live_deployment(scenario)
    provider = scenario.doc.provider or deployment.provider or "scripted"
    config = ScriptedConfig(replies=str(replies), providers=(provider,))
    return _swap_transport(
        scenario, deployment, PluginEntry("scripted-model", "replay", scripted_plugin, config, None)
    )


def _first_route(log: Path) -> tuple[str | None, str | None]:
    """The provider and model of a recording's first request header (None where it names none)."""
    recorded = read_log(log / ROOT_LOG if log.is_dir() else log)
    for event, line in recorded.events():
        if event.type == RequestHeader.TAG:
            try:
                header = event.view()
            except msgspec.DecodeError as error:
                raise ScriptError(
                    f"bad {event.type} (seq {event.seq}): {error}", place=recorded.place(event, line)
                ) from None
            assert isinstance(header, RequestHeader)  # decoded through the event table by its tag
            return header.data.header.config.provider, header.data.header.config.model
    return None, None


def with_replay(deployment: Deployment | None, log: Path, provider: str | None = None) -> Deployment:
    """A deployment with its live transport swapped for the replay plugin serving `log` (a JSONL log or a
    scenario directory): `dsh run|chat|acp --replay LOG` (the `dsh.replay` entry point). With no deployment, the
    one `dsh replay` uses. The recording is served under its own provider ids and under every route the
    deployment names (its `provider:` and the live transport's routes) and under `provider` (`--provider`),
    whatever they are called; an agent of a deployment that names no provider or model takes the recording's. A
    scenario directory's `workspace/` is copied into the session's cwd when that is empty (`--cwd "$(mktemp -d)"`),
    so the recording's tools find its files."""
    if deployment is None:
        deployment = load_deployment(DEFAULT_DEPLOYMENT)
    recorded, model = _first_route(log)
    routes = dict.fromkeys(
        route
        for entry in deployment.plugins
        if (transport := wire_transport(entry.plugin)) is not None
        for route in transport.routes(entry.config)
    )
    agent_provider = provider or deployment.provider or recorded or DEFAULT_PROVIDER
    routes[agent_provider] = None
    workspace = log / WORKSPACE_DIR if log.is_dir() else None
    config = ReplayConfig(
        log=str(log),
        routes=tuple(routes),
        workspace=str(workspace) if workspace is not None and workspace.is_dir() else None,
    )
    replay = PluginEntry("replay", "replay", replay_plugin, config, None)
    swapped = _swap_transport(log, deployment, replay)
    return Deployment(
        swapped.path, _replayable(swapped.plugins, log), deployment.model or model, agent_provider
    )


def _on_wire(pinned: Transport | None, asked: bool) -> bool:
    return pinned == "wire" or (asked and pinned is None)


def replay_deployment(scenario: Scenario, *, pace_ms: float = 0.0, wire: bool = False) -> Deployment:
    """The scenario's deployment with the live transport swapped for the replay plugin serving its recording (which
    also provides the clock retry waits on, where no wait takes time; retry's config stays the deployment's). With
    `wire` (or the scenario's `transport: wire`), the replay plugin serves the recording on the wire to the
    transport's real adapter (replay/driver/_wire.py)."""
    deployment = live_deployment(scenario)
    source = scenario.directory or scenario.log
    config = ReplayConfig(
        log=str(source), pace_ms=pace_ms, tools=scenario.doc.tools, hooks=scenario.doc.hooks
    )
    replay = PluginEntry("replay", "replay", replay_plugin, config, None)
    entries: list[PluginEntry] = []
    for entry in deployment.plugins:
        transport = wire_transport(entry.plugin)
        if transport is not None and replay in entries:
            continue  # one replay plugin serves every route of the recording
        if transport is not None and _on_wire(scenario.doc.transport, wire):
            from ._wire import wire_replay_plugin

            replay = PluginEntry(
                "replay", "replay", wire_replay_plugin(transport, entry.config), config, None
            )
            entries.append(replay)
        elif transport is not None:
            entries.append(replay)
        else:
            entries.append(entry)
    if replay not in entries:
        raise _no_transport(deployment, source, "the replay plugin to stand in for")
    return Deployment(
        deployment.path, _replayable(tuple(entries), Path(source)), deployment.model, deployment.provider
    )
