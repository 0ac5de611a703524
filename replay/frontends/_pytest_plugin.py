"""The pytest plugin (`pytest11` entry point `dsh`): every scenario directory under the roots a project names
(`dsh_scenarios` in its pytest config, or `--dsh-scenarios DIR`) is collected as one test item that re-runs the
recording through the scenario's deployment, compares the skeleton, then the goldens (syrupy snapshots beside the
scenario, in `__snapshots__/scenario.ambr`). It does nothing in a project that names no root.

It also gives hand-written tests `dsh_replay`, `dsh_store` and `dsh_author` (a scenario whose model is written in
the test, in the replies format `dsh record --script` reads). See docs/testing.md."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..recordings._layout import SCENARIO_FILE
from ._goldens import GOLDEN_FILE, GOLDENS, ITEM_NAME, first_difference, replayed_goldens
from ._pytest_goldens import PROMPT_GOLDEN, UNSEEN_PROPERTY, UnseenTools, with_prompt_golden

if TYPE_CHECKING:
    from dsh.runtime.session import SessionStore

    from ..driver._rerun import Rerun
    from ..driver._scenario import Scenario

# Every pytest run where dsh is installed imports this module (the `pytest11` entry point), and most never name a
# scenario root: what replays a scenario (anyio, msgspec, yaml, the kernel, the session store, the rerun driver) is
# imported where it is used, once a project opts in or a test asks for one of the fixtures.

__all__ = [
    "GoldenMismatch",
    "ScenarioDiverged",
    "ScenarioItem",
    "dsh_author",
    "dsh_replay",
    "dsh_store",
    "in_project",
    "pytest_addoption",
    "pytest_cmdline_main",
    "pytest_configure",
]

INI = "dsh_scenarios"
WIRE_INI = "dsh_wire_replay"
PROMPT_INI = "dsh_prompt_goldens"
NOT_RUN = "(the scenario did not run)"
DIST = "worksteal"
"""The xdist scheduling a scenario project gets when the user names none (see pytest_cmdline_main)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dsh", "dsh replay scenarios")
    group.addoption(
        "--dsh-scenarios",
        action="append",
        default=[],
        metavar="DIR",
        help="Collect every scenario directory (holding scenario.yml) below DIR as a test (adds to the "
        f"{INI} ini option; may be given more than once).",
    )
    group.addoption(
        "--dsh-record",
        action="store_true",
        default=False,
        help="Re-record the selected scenarios against the live model before replaying them (a scenario whose "
        "route has no key is skipped).",
    )
    parser.addini(
        WIRE_INI,
        type="bool",
        default=False,
        help="Replay every scenario on the wire: the recorded calls are served as the provider's stream to the "
        "deployment's real model adapter (a scenario's `transport:` in scenario.yml wins).",
    )
    parser.addini(
        PROMPT_INI,
        type="bool",
        default=False,
        help="Keep a third golden per scenario, replay[prompt]: the system prompt and tool schemas each distinct "
        "step sent (a scenario's `prompt_golden:` in scenario.yml wins).",
    )
    parser.addini(
        INI,
        type="args",
        default=[],
        help="Directories, relative to the rootdir, whose scenario directories (holding scenario.yml) are "
        "collected as tests by dsh's plugin.",
    )


def _roots(config: pytest.Config) -> list[Path]:
    named = [(config.rootpath, str(entry), f"{INI} ini option") for entry in config.getini(INI)]
    named += [
        (config.invocation_params.dir, entry, "--dsh-scenarios") for entry in config.option.dsh_scenarios
    ]
    roots = []
    for base, entry, where in named:
        root = (base / entry).resolve()
        if not root.is_dir():
            raise pytest.UsageError(
                f"{where}: {entry!r} is not a directory (resolved to {root}); name a directory of scenarios, "
                f"relative to {'the rootdir' if where.startswith(INI) else 'the current directory'}"
            )
        roots.append(root)
    return list(dict.fromkeys(roots))


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(
    config: pytest.Config,
) -> Generator[None, int | pytest.ExitCode, int | pytest.ExitCode]:
    """Under pytest-xdist (`-n N`) with no `--dist` of the user's, scenarios are scheduled `worksteal`: their
    replays differ in length (a bash or fs scenario runs commands, a text turn none), and a worker that runs out
    takes the tail of the other's queue. Set here, around xdist's own hook, which picks `load` when `--dist` is
    unset; only in a project that names a scenario root."""
    option = config.option
    chose = getattr(option, "dist", "no") != "no" or getattr(option, "distload", False)
    if getattr(option, "numprocesses", None) and not chose and (config.getini(INI) or option.dsh_scenarios):
        option.dist = DIST
    return (yield)


def pytest_configure(config: pytest.Config) -> None:
    roots = _roots(config)
    if not roots:
        return  # inert: this project does not test scenarios
    if not config.pluginmanager.hasplugin("syrupy"):
        raise pytest.UsageError(
            f"{INI} is set, and dsh's scenario goldens are syrupy snapshots: install syrupy (pip install syrupy)"
        )
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # no paths were given: pytest collects its testpaths (or the current directory); make sure that includes
        # the roots, so naming them once in the config is enough
        covered = [(config.invocation_params.dir / arg).resolve() for arg in config.args]
        for root in roots:
            if not any(root.is_relative_to(path) for path in covered):
                config.args.append(str(root))
    config.pluginmanager.register(_Scenarios(roots), "dsh-scenarios")
    config.pluginmanager.register(UnseenTools(), "dsh-unseen-tools")


class _Scenarios:
    """The active half of the plugin: collects scenario directories below the roots, and shows syrupy the goldens
    of a directory that lost its scenario.yml, so they are reported unused (and deleted by --snapshot-update) as any
    unused snapshot is."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = list(roots)
        self.orphans: list[Path] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        resolved = path.resolve()
        if not any(resolved.is_relative_to(root) for root in self.roots):
            return None
        if not (path / SCENARIO_FILE).is_file():
            if (path / parent.config.option.snapshot_dirname / GOLDEN_FILE).is_file():
                self.orphans.append(path)
            return None
        return ScenarioDirectory.from_parent(parent, path=path)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for directory in self.orphans:
            _show_goldens(session.config, _GoldenSite(directory))


class ScenarioDirectory(pytest.Directory):
    """A scenario directory: one item, and nothing below it is collected (its workspace is data, not tests)."""

    def collect(self) -> Iterator[pytest.Item]:
        item = ScenarioItem.from_parent(self, name=ITEM_NAME, callobj=replay_scenario, directory=self.path)
        if self.config.option.dsh_record:
            from dsh.runtime.kernel.errors import DshError

            from ..driver._routes import missing_key
            from ..driver._scenario import load_scenario

            # skipped as a mark, so the report names the scenario rather than a line of this plugin
            try:
                missing = missing_key(load_scenario(self.path))
            except DshError:
                missing = None  # a scenario that does not load fails when it runs, with its own report
            if missing is not None:
                item.add_marker(pytest.mark.skip(reason=f"--dsh-record: {missing}"))
        yield item


def replay_scenario(request: pytest.FixtureRequest, snapshot: Any) -> None:
    """Re-run the scenario through its deployment; compare its skeleton with the recording's, then its goldens."""
    item = request.node
    assert isinstance(item, ScenarioItem)
    item.check(snapshot)


class ScenarioDiverged(Exception):
    """The replay did not do what the recording did (its skeleton differs, or the replay adapter or a recorded
    tool met a call the recording does not hold)."""


class GoldenMismatch(Exception):
    """The replay matches its recording's skeleton, and its replayed log or view differs from the golden."""


class ScenarioItem(pytest.Function):
    """One scenario as a test. A pytest Function (its callable is `replay_scenario`), so it gets fixtures, and syrupy's
    `snapshot` fixture places its goldens beside the scenario: the item's path is the scenario's `scenario.yml`."""

    def __init__(self, *, directory: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.directory = directory
        self.path = directory / SCENARIO_FILE

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario {self._shown}"

    @property
    def _shown(self) -> str:
        try:
            return self.directory.resolve().relative_to(self.config.rootpath).as_posix()
        except ValueError:
            return str(self.directory)

    def check(self, snapshot: Any) -> None:
        import anyio

        from ..driver._prompts import prompt_golden
        from ..driver._rerun import rerun
        from ..driver._scenario import load_scenario

        goldens: tuple[str, ...] = GOLDENS
        try:
            scenario = in_project(load_scenario(self.directory), self.config.rootpath)
            if with_prompt_golden(scenario, self.config.getini(PROMPT_INI)):
                goldens = (*GOLDENS, PROMPT_GOLDEN)
            if self.config.option.dsh_record:
                self._record(scenario)
                scenario = in_project(load_scenario(self.directory), self.config.rootpath)
            wire = bool(self.config.getini(WIRE_INI))
            result = anyio.run(lambda: rerun(scenario, wire=wire))
        except Exception:
            # the scenario did not run: its goldens are kept (compared with nothing, never written), not taken
            # for unused ones that --snapshot-update would delete
            snapshot.update_snapshots = snapshot.update_new_snapshots_only = False
            for name in goldens:
                _ = snapshot(name=name) == NOT_RUN
            raise
        if result.divergence is not None:
            # a replay that diverged never writes goldens; they are still compared, so syrupy counts them used (and
            # --snapshot-update does not delete them as unused)
            snapshot.update_snapshots = snapshot.update_new_snapshots_only = False
        # both goldens are compared (so neither is reported unused when the other differs); the log's report first
        problems = []
        replayed = replayed_goldens(result)
        if PROMPT_GOLDEN in goldens:
            replayed[PROMPT_GOLDEN] = prompt_golden([log for _, log in result.logs])
        self.user_properties.append((UNSEEN_PROPERTY, result.unseen_tools))
        for name, data in replayed.items():
            assertion = snapshot(name=name)
            if assertion != data:
                problems.append(self._golden_report(assertion, name))
        if result.divergence is not None:
            raise ScenarioDiverged(
                f"scenario {self._shown} diverged from its recording:\n{_indent(result.divergence)}\n"
                f"reproduce: dsh replay {self._shown}"
            )
        if problems:
            raise GoldenMismatch("\n".join(problems[:1]) + _also(problems[1:]))

    def _record(self, scenario: Scenario) -> None:
        import anyio

        from ..driver._rerun import record
        from ..recordings._errors import RecordingFailed
        from ..script._recording import ROOT_LOG, child_logs

        failed: RecordingFailed | None = None
        try:
            logs: list[tuple[object, bytes]] = list(anyio.run(lambda: record(scenario)))
        except RecordingFailed as error:
            failed, logs = error, error.logs
        for stale in child_logs(self.directory):
            stale.unlink()
        for number, (_, data) in enumerate(logs):
            name = ROOT_LOG if number == 0 else f"session.{number}.jsonl"
            (self.directory / name).write_bytes(data)
        if failed is not None:
            raise failed  # the logs are written for a look; the item fails, so its goldens are never written

    def _golden_report(self, assertion: Any, name: str) -> str:
        result = assertion.executions[assertion.num_executions - 1]
        where = f"{Path(result.snapshot_location).relative_to(self.directory).as_posix()} [{result.snapshot_name}]"
        what = {"log": "replayed log", PROMPT_GOLDEN: "prompt (system prompts and tool schemas sent)"}.get(
            name, "view (what the user saw)"
        )
        head = f"scenario {self._shown}: the {what} differs from its golden {where}"
        if result.recalled_data is None:
            detail = "  the golden does not exist yet: write it with pytest --snapshot-update"
        else:
            detail = first_difference(str(result.recalled_data), str(result.asserted_data or ""))
        return (
            f"{head}\n{detail}\nreproduce: dsh replay {self._shown}\n"
            f"if the change is intended, refresh the goldens: pytest --snapshot-update {self._shown}"
        )

    def repr_failure(  # type: ignore[override]  # pytest.Function narrows Node.repr_failure the same way
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> Any:
        """The report alone for a divergence, a golden mismatch or a dsh error; the traceback only with -vv."""
        from dsh.runtime.kernel.errors import DshError

        error = excinfo.value
        if self.config.get_verbosity() < 2:
            if isinstance(error, ScenarioDiverged | GoldenMismatch):
                return str(error)
            if isinstance(error, DshError):
                return f"scenario {self._shown}: {type(error).__name__}: {error}\n(-vv shows the traceback)"
        return super().repr_failure(excinfo)


class _GoldenSite:
    """What syrupy reads of a test item to place its snapshots (path, name, id, callable), for a scenario directory
    that has goldens and no scenario: the item it would have."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / SCENARIO_FILE
        self.name = ITEM_NAME
        self.nodeid = f"{directory.as_posix()}::{ITEM_NAME}"
        self.obj = replay_scenario


def _show_goldens(config: pytest.Config, site: _GoldenSite) -> None:
    """Register, unasserted, a snapshot assertion at `site` with syrupy's session: it discovers the goldens there,
    and none of them being used, reports them unused (syrupy has no public way to name a site to discover)."""
    from syrupy.assertion import SnapshotAssertion
    from syrupy.extensions import DEFAULT_EXTENSION
    from syrupy.location import PyTestLocation
    from syrupy.utils import import_module_member

    extension = config.option.default_extension
    SnapshotAssertion(
        update_snapshots=config.option.update_snapshots,
        extension_class=import_module_member(extension) if extension else DEFAULT_EXTENSION,
        test_location=PyTestLocation(site),  # type: ignore[arg-type]  # syrupy reads only what _GoldenSite has
        session=config._syrupy,  # type: ignore[attr-defined]  # syrupy keeps its session on the config
    )


def _also(more: list[str]) -> str:
    if not more:
        return ""
    return "\n(the view golden differs too)" if len(more) == 1 else f"\n({len(more)} more goldens differ)"


def in_project(scenario: Scenario, root: Path) -> Scenario:
    """`scenario` with its `deployment` resolved relative to the scenario, then (no such file there) to `root`."""
    import msgspec

    from ..driver._scenario import Scenario

    named = scenario.doc.deployment
    if named is None or scenario.directory is None or (scenario.directory / named).exists():
        return scenario
    if not (root / named).is_file():
        return scenario  # not found anywhere: loading it names the path beside the scenario
    doc = msgspec.structs.replace(scenario.doc, deployment=str((root / named).resolve()))
    return Scenario(scenario.name, scenario.log, scenario.directory, doc)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())


# ---------------------------------------------------------------- fixtures for hand-written tests


@pytest.fixture
def dsh_replay(request: pytest.FixtureRequest) -> Callable[[str | Path], Rerun]:
    """`dsh_replay(path) -> Rerun`: re-run a scenario directory or JSONL log (a relative path is taken from the
    rootdir); the result holds the replayed events, tool calls, final text, view and any divergence."""
    import anyio

    from ..driver._rerun import rerun
    from ..driver._scenario import load_scenario

    root = request.config.rootpath

    def run(path: str | Path) -> Rerun:
        scenario = in_project(load_scenario(Path(path) if Path(path).is_absolute() else root / path), root)
        return anyio.run(lambda: rerun(scenario))

    return run


@pytest.fixture
def dsh_store(tmp_path: Path) -> Iterator[SessionStore]:
    """A session store in a temporary directory, with the deterministic clock and ids replays use."""
    from dsh.runtime.session import CountingIds, FixedClock, SessionStore

    from ..driver._rerun import CLOCK_START

    with SessionStore(tmp_path / "sessions.db", clock=FixedClock(CLOCK_START, 1), ids=CountingIds()) as store:
        yield store


@pytest.fixture
def dsh_author(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Path]:
    """`dsh_author(inputs, replies, deployment=None, workspace=None, tools=None) -> Path`: a scenario recorded
    against a model written in the test (`replies`: the list `dsh record --script` reads under `replies:`), in a
    temporary directory; pass it to `dsh_replay`. `deployment` is a deployment file, a relative path taken from the
    rootdir (default: replay's own); `workspace` a directory copied as the scenario's workspace."""
    import anyio
    import yaml

    from ..driver._rerun import record
    from ..driver._scenario import load_scenario
    from ..script._recording import ROOT_LOG

    root = request.config.rootpath

    def author(
        inputs: Sequence[str],
        replies: Sequence[Mapping[str, Any]],
        *,
        deployment: str | Path | None = None,
        workspace: str | Path | None = None,
        tools: Mapping[str, str] | None = None,
    ) -> Path:
        directory = Path(tempfile.mkdtemp(prefix="scenario-", dir=tmp_path_factory.getbasetemp()))
        doc: dict[str, Any] = {"inputs": list(inputs)}
        if deployment is not None:
            doc["deployment"] = str(root / deployment)
        if tools:
            doc["tools"] = dict(tools)
        if workspace is not None:
            shutil.copytree(root / workspace, directory / "workspace", symlinks=True)
        (directory / SCENARIO_FILE).write_text(yaml.safe_dump(doc), encoding="utf-8")
        script = directory / "replies.yml"
        script.write_text(yaml.safe_dump({"replies": [dict(reply) for reply in replies]}), encoding="utf-8")
        scenario = load_scenario(directory)
        logs = anyio.run(lambda: record(scenario, replies=script))
        for number, (_, data) in enumerate(logs):
            (directory / (ROOT_LOG if number == 0 else f"session.{number}.jsonl")).write_bytes(data)
        return directory

    return author
