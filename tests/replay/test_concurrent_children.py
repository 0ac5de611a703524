"""Replay determinism for concurrent children and background work: a parent whose one step makes two `subagent` (spawn) calls and one
`subagent_fork` call at once is recorded by the real loop (a scripted model, one script per child), exported as a
scenario directory, and re-run many times in a row: every run matches the recording's skeleton, binds each child
to the recorded log its tool call spawned, and writes byte-identical logs. The same holds for background
(continuable) children, whose reports and settlement notices reach the parent's inbox in whatever order the
scheduler runs them while recording, and exactly where the recording has them in every re-run; and for background
bash jobs started by sibling calls of one step, read while they run, one finishing on its own and one killed, whose
settlement notices wake the parent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from dsh.replay import golden_jsonl, load_scenario, read_log, rerun, skeleton
from dsh.runtime.agent import AGENTS, AgentOptions
from dsh.runtime.kernel import (
    Context,
    Deployment,
    NoConfig,
    Plugin,
    PluginEntry,
    decode_plugin_config,
    load_deployment,
    load_deployment_into,
)
from dsh.runtime.llm import LLM, LlmRequest, StreamChunk
from dsh.runtime.session import (
    STORE,
    CountingIds,
    FixedClock,
    SessionInfo,
    SessionStore,
    SpawnedBy,
    write_jsonl,
)
from tests.runtime.agent.harness import ScriptedAdapter, calls, text

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DEPLOYMENT = ROOT / "replay" / "default-deployment.yml"
RUNS = 50
CHILDREN = ("a", "b", "c")


def delegate(call_id: str, tool: str, prompt: str) -> tuple[str, str, str]:
    return (call_id, tool, json.dumps({"description": f"Task {call_id}", "prompt": prompt}))


def meets_siblings(
    arrived: list[str], together: anyio.Event, *chunks: StreamChunk
) -> Callable[[LlmRequest], AsyncIterator[StreamChunk]]:
    """A child's first call that waits until every child is mid-call: the three really run at once."""

    async def stream(request: LlmRequest) -> AsyncIterator[StreamChunk]:
        arrived.append(str(request.session_id))
        if len(arrived) == len(CHILDREN):
            together.set()
        await together.wait()
        for chunk in chunks:
            yield chunk

    return stream


def scripted_deployment(
    adapter: ScriptedAdapter,
    *,
    overlay: dict[str, dict[str, object]] | None = None,
    continuable: bool = False,
) -> Deployment:
    """replay's default deployment (what a re-run loads) with the live transport swapped for `adapter`, and each
    plugin `overlay` names configured as it says, as a scenario's overlay sets them (`continuable`: the `subagent`
    tool in `background_mode: continuable`)."""
    deployment = load_deployment(DEFAULT_DEPLOYMENT)
    configs = dict(overlay or {})
    if continuable:
        configs["tool-subagent"] = {"provider": "spawn", "background_mode": "continuable"}
    deployment = Deployment(
        deployment.path,
        tuple(
            PluginEntry(
                e.id,
                e.use,
                e.plugin,
                decode_plugin_config(type(e.config), configs[e.id], plugin=e.id),
                e.line,
            )
            if e.id in configs
            else e
            for e in deployment.plugins
        ),
    )

    def register(ctx: Context, config: NoConfig) -> None:
        ctx.get(LLM).register("scripted", adapter)

    model = Plugin(name="scripted", apply=register, needs=(LLM,))
    entries = tuple(
        PluginEntry("scripted", "tests", model, NoConfig(), None) if e.plugin.name == "llm_openai" else e
        for e in deployment.plugins
    )
    return Deployment(deployment.path, entries)


@contextmanager
def hosting(store: SessionStore, adapter: ScriptedAdapter, deployment: Deployment) -> Iterator[Context]:
    """A host over `store` with `deployment` loaded, its model `adapter` keyed by session: the parent's script, or
    the script named after the call that spawned the child; unloaded and disposed on the way out."""
    ctx = Context()
    ctx.provide(STORE, store)

    def key(request: LlmRequest) -> str:
        assert request.session_id is not None
        spawned = store.info(request.session_id).spawned_by
        return "parent" if spawned is None else spawned.call_id

    adapter.key = key
    loaded = load_deployment_into(ctx, deployment)
    try:
        yield ctx
    finally:
        for plugin in reversed(loaded):
            plugin.unload()
        ctx.dispose()


def exported(store: SessionStore, workspace: Path) -> list[bytes]:
    """Every session's log as JSONL, by creation (the primary first), with the workspace written `{{cwd}}`."""
    sessions = sorted(store.sessions(), key=lambda info: (info.created_at, info.id))
    return [
        b"".join(write_jsonl(info, store.events(info.id))).replace(str(workspace).encode(), b"{{cwd}}")
        for info in sessions
    ]


async def record(scratch: Path, workspace: Path) -> list[bytes]:
    """Run the parent's two turns with one script per session; return the logs as JSONL, the primary first, then
    the children by creation, with the workspace written `{{cwd}}`."""
    arrived: list[str] = []
    together = anyio.Event()
    adapter = ScriptedAdapter(
        scripts={
            "parent": [
                text("OK"),
                calls(
                    delegate("a", "subagent", "Count the files."),
                    delegate("b", "subagent", "Say hello."),
                    delegate("c", "subagent_fork", "What is the codeword?"),
                ),
                text("All three answered."),
            ],
            "a": [
                meets_siblings(arrived, together, *calls(("a1", "todo_write", '{"todos": []}'))),
                text("there are 3"),
            ],
            "b": [meets_siblings(arrived, together, *text("hello"))],
            "c": [meets_siblings(arrived, together, *text("MARMALADE"))],
        }
    )
    with SessionStore(scratch / "record.db", clock=FixedClock(1_000, 1), ids=CountingIds()) as store:
        with hosting(store, adapter, scripted_deployment(adapter)) as ctx:
            options = AgentOptions(provider="scripted", model="scripted", cwd=workspace)
            async with ctx.get(AGENTS).create(options) as parent:
                await parent.run("Remember this: the codeword is MARMALADE. Reply OK.")
                await parent.run("Count the files, say hello, and recall the codeword, all at once.")
        assert adapter.unserved() == {}
        assert len(set(arrived)) == 3, "the three children were mid-call at once"
        return exported(store, workspace)


def answers(log: bytes) -> tuple[str, ...]:
    """The text of every assistant message of a JSONL log."""
    out = []
    for line in log.splitlines()[1:]:
        event = json.loads(line)
        if event["type"] == "assistant/message":
            out += [block["text"] for block in event["data"]["message"]["content"] if block["type"] == "text"]
    return tuple(out)


def by_spawning_call(logs: list[tuple[SessionInfo, bytes]]) -> dict[SpawnedBy | None, bytes]:
    return {info.spawned_by: data for info, data in logs}


def _scenario(base: Path, recorder: Callable[[Path, Path], Awaitable[list[bytes]]], *, children: int) -> Path:
    """A scenario directory of what `recorder` logged in a fresh workspace: the root log and its children's."""
    workspace, directory = base / "workspace", base / "scenario"
    workspace.mkdir()
    directory.mkdir()
    root, *logs = anyio.run(recorder, base, workspace)
    assert len(logs) == children
    (directory / "session.jsonl").write_bytes(root)
    for number, child in enumerate(logs, 1):
        (directory / f"session.{number}.jsonl").write_bytes(child)
    return directory


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _scenario(tmp_path_factory.mktemp("concurrent"), record, children=3)


def test_the_recording_holds_three_concurrent_children_of_one_step(recorded: Path) -> None:
    root = read_log(recorded / "session.jsonl")
    children = [read_log(recorded / f"session.{n}.jsonl") for n in (1, 2, 3)]
    assert {child.info.spawned_by for child in children} == {
        SpawnedBy(turn=2, step=1, call_id=call) for call in CHILDREN
    }
    assert all(child.info.parent_id == root.info.id for child in children)
    fork = next(c for c in children if c.info.spawned_by and c.info.spawned_by.call_id == "c")
    assert fork.info.seed_length, "the fork child inherits the completed first turn"


def test_fifty_reruns_match_bind_by_spawned_by_and_write_identical_logs(recorded: Path) -> None:
    scenario = load_scenario(recorded)
    recorded_children = {
        log.info.spawned_by: (
            skeleton((event for event, _ in log.events()), seed=log.info.seed_length),
            answers(Path(log.info.name).read_bytes()),
        )
        for log in (read_log(recorded / f"session.{n}.jsonl") for n in (1, 2, 3))
    }
    assert len({answer for _, answer in recorded_children.values()}) == 3, "each child says something else"
    first: dict[SpawnedBy | None, str] | None = None
    for run in range(RUNS):
        result = anyio.run(lambda: rerun(scenario))
        assert result.divergence is None, f"run {run}: {result.divergence}"
        assert len(result.logs) == 4
        for (info, data), replayed in zip(result.logs[1:], result.replayed[1:], strict=True):
            # bound by spawned_by: each replayed child did and said what the child its tool call spawned did
            assert (replayed, answers(data)) == recorded_children[info.spawned_by], f"run {run}: {info.id}"
        goldens = {spawned: golden_jsonl(data) for spawned, data in by_spawning_call(result.logs).items()}
        if first is None:
            first = goldens
        assert goldens == first, f"run {run} wrote different logs from run 0"


def test_children_numbered_against_creation_order_are_compared_with_the_log_they_bound_to(
    recorded: Path, tmp_path: Path
) -> None:
    """The recording's child files need not follow the order in which the re-run creates the children (a
    recording's numbering is the recorder's affair): each replayed child is compared with the log it was bound to."""
    renumbered = tmp_path / "renumbered"
    renumbered.mkdir()
    (renumbered / "session.jsonl").write_bytes((recorded / "session.jsonl").read_bytes())
    for new, old in ((1, 3), (2, 1), (3, 2)):
        (renumbered / f"session.{new}.jsonl").write_bytes((recorded / f"session.{old}.jsonl").read_bytes())
    result = anyio.run(lambda: rerun(load_scenario(renumbered)))
    assert result.divergence is None, result.divergence
    assert [info.spawned_by.call_id for info, _ in result.logs[1:] if info.spawned_by] == ["c", "a", "b"]


BACKGROUND = ("x", "y")


def reporting(call_id: str) -> tuple[str, str, str]:
    return (call_id, "subagent", json.dumps({"description": f"Task {call_id}", "prompt": f"Find {call_id}."}))


async def record_background(scratch: Path, workspace: Path) -> list[bytes]:
    """A parent that starts two continuable children in one step and answers at once; each child reports, then
    settles; the parent's inbox starts as many turns as the arrivals make; then one more user turn."""
    arrived: list[str] = []
    together = anyio.Event()

    def meets(*chunks: StreamChunk) -> Callable[[LlmRequest], AsyncIterator[StreamChunk]]:
        async def stream(request: LlmRequest) -> AsyncIterator[StreamChunk]:
            arrived.append(str(request.session_id))
            if len(arrived) == len(BACKGROUND):
                together.set()
            await together.wait()
            for chunk in chunks:
                yield chunk

        return stream

    adapter = ScriptedAdapter(
        scripts={
            "parent": [
                calls(*(reporting(c) for c in BACKGROUND)),
                text("Both started."),
                *[text("noted")] * 8,
            ],
            **{
                c: [
                    meets(*calls((f"{c}1", "report", json.dumps({"output": f"found {c}"})))),
                    text(f"done {c}"),
                ]
                for c in BACKGROUND
            },
        }
    )
    with SessionStore(scratch / "record.db", clock=FixedClock(1_000, 1), ids=CountingIds()) as store:
        with hosting(store, adapter, scripted_deployment(adapter, continuable=True)) as ctx:
            options = AgentOptions(provider="scripted", model="scripted", cwd=workspace)
            agents = ctx.get(AGENTS)
            async with agents.create(options) as parent:
                await parent.run("Start both searches in the background.")
                with anyio.fail_after(10):
                    while (
                        True
                    ):  # every child settled, and the parent's inbox has taken in everything they sent
                        children = [a for a in agents.live() if a.parent is parent]
                        settled = len(children) == len(BACKGROUND) and all(
                            c.log.state.last_turn >= 1 and not c.busy for c in children
                        )
                        notices = sum(
                            1 for e in parent.log.state.surface.nodes if "finished and will do" in e.message
                        )
                        if settled and notices == len(BACKGROUND) and not parent.busy:
                            break
                        await anyio.sleep(0.01)
                await parent.run("Thanks.")
        assert len(set(arrived)) == 2, "the two children were mid-call at once"
        return exported(store, workspace)


@pytest.fixture(scope="module")
def recorded_background(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = _scenario(tmp_path_factory.mktemp("background"), record_background, children=2)
    (directory / "scenario.yml").write_text("overlay:\n  tool-subagent: {background_mode: continuable}\n")
    return directory


def test_background_children_report_into_the_parent_inbox_and_wake_it(recorded_background: Path) -> None:
    root = read_log(recorded_background / "session.jsonl")
    kinds = []
    for event, _ in root.events():
        if event.type == "agent/inbox/spliced":
            data = json.loads(event.data)
            kinds += [item["source"]["kind"] for item in data["inserted"]]
    assert sorted(kinds) == sorted(["user", "user", *["subagent-report"] * 2, *["subagent-settled"] * 2])
    turns = [json.loads(e.data)["turn"] for e, _ in root.events() if e.type == "turn/start"]
    assert len(turns) >= 3, "the inbox started at least one turn between the two user turns"


def test_fifty_reruns_of_background_children_write_identical_logs(recorded_background: Path) -> None:
    scenario = load_scenario(recorded_background)
    first: dict[SpawnedBy | None, str] | None = None
    for run in range(RUNS):
        result = anyio.run(lambda: rerun(scenario))
        assert result.divergence is None, f"run {run}: {result.divergence}"
        assert len(result.logs) == 3
        goldens = {spawned: golden_jsonl(data) for spawned, data in by_spawning_call(result.logs).items()}
        if first is None:
            first = goldens
            recorded_root = golden_jsonl((recorded_background / "session.jsonl").read_bytes())
            # the re-run's parent took in the same inputs at the same places as the recording
            assert _inbox_lines(goldens[None]) == _inbox_lines(recorded_root)
        assert goldens == first, f"run {run} wrote different logs from run 0"


def _inbox_lines(log: str) -> list[tuple[int, str, list[str]]]:
    """Each inbox splice of a log: its place among the log's boundaries, its target and its sources' kinds."""
    out = []
    boundaries = 0
    for line in log.splitlines()[1:]:
        event = json.loads(line)
        if event["type"] in ("turn/start", "step/start", "step/end", "turn/end"):
            boundaries += 1
        elif event["type"] == "agent/inbox/spliced":
            data = event["data"]
            out.append((boundaries, data["target"], [item["source"]["kind"] for item in data["inserted"]]))
    return out


def bash_job(call_id: str, command: str) -> tuple[str, str, str]:
    arguments = {"command": command, "description": f"Job {call_id}", "run_in_background": True}
    return (call_id, "bash", json.dumps(arguments))


def job_call(call_id: str, tool: str, **arguments: object) -> tuple[str, str, str]:
    return (call_id, tool, json.dumps(arguments))


JOBS_OVERLAY: dict[str, dict[str, object]] = {
    "tool-bash": {"run_in_background": True},
    "tool-subagent": {"provider": "spawn", "run_in_background": True},
}
JOBS_SCENARIO = (
    "overlay:\n  tool-bash: {run_in_background: true}\n"
    "  tool-subagent: {provider: spawn, run_in_background: true}\n"
)


async def record_bash_jobs(scratch: Path, workspace: Path) -> list[bytes]:
    """A parent that starts two background bash jobs and a background subagent in one step (one command prints
    and exits, one runs until killed), waits for the first, reads the second, kills it, waits for the subagent's
    answer and answers; notices enter the running turn or start turns of their own; then one more user turn."""
    adapter = ScriptedAdapter(
        scripts={
            "parent": [
                calls(
                    bash_job("j1", "echo alpha; exit 2"),
                    bash_job("j2", "echo beta; while [ ! -e never-created ]; do sleep 0.02; done"),
                    job_call(
                        "s3", "subagent", description="Say hi", prompt="Say hi.", run_in_background=True
                    ),
                ),
                calls(job_call("o1", "job_output", job_id="job-1", wait=True, timeout_ms=10_000)),
                calls(job_call("o2", "job_output", job_id="job-2")),
                calls(job_call("k2", "job_kill", job_id="job-2", reason="not needed")),
                calls(job_call("o3", "job_output", job_id="job-3", wait=True, timeout_ms=10_000)),
                text("Two finished, one stopped."),
                *[text("noted")] * 6,
            ],
            "s3": [text("hi")],
        }
    )
    with SessionStore(scratch / "record.db", clock=FixedClock(1_000, 1), ids=CountingIds()) as store:
        with hosting(store, adapter, scripted_deployment(adapter, overlay=JOBS_OVERLAY)) as ctx:
            options = AgentOptions(provider="scripted", model="scripted", cwd=workspace)
            async with ctx.get(AGENTS).create(options) as parent:
                await parent.run("Run both jobs in the background.")
                with anyio.fail_after(10):
                    while True:  # both notices taken in, and the turns they started over
                        notices = sum(1 for _ in store.events(parent.id, types=("job/settled",)))
                        if notices == 3 and not parent.busy and not parent.pending("next-turn"):
                            break
                        await anyio.sleep(0.01)
                await parent.run("Thanks.")
        assert adapter.unserved().get("s3") is None, "the subagent answered"
        return exported(store, workspace)


@pytest.fixture(scope="module")
def recorded_bash_jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = _scenario(tmp_path_factory.mktemp("bash-jobs"), record_bash_jobs, children=1)
    (directory / "scenario.yml").write_text(JOBS_SCENARIO)
    return directory


def test_fifty_reruns_of_background_jobs_write_identical_logs(recorded_bash_jobs: Path) -> None:
    recorded = golden_jsonl((recorded_bash_jobs / "session.jsonl").read_bytes())
    settled = [json.loads(line)["data"] for line in recorded.splitlines() if '"type":"job/settled"' in line]
    assert sorted((s["jobId"], s["status"]) for s in settled) == [
        ("job-1", "completed"),
        ("job-2", "killed"),
        ("job-3", "completed"),
    ]
    scenario = load_scenario(recorded_bash_jobs)
    first: str | None = None
    for run in range(RUNS):
        result = anyio.run(lambda: rerun(scenario))
        assert result.divergence is None, f"run {run}: {result.divergence}"
        assert len(result.logs) == 2
        log = golden_jsonl(result.logs[0][1])
        if first is None:
            first = log
            # the notices entered where the recording has them, and each job settled as recorded
            assert _inbox_lines(log) == _inbox_lines(recorded)
            assert _settled(log) == _settled(recorded)
        assert log == first, f"run {run} wrote a different log from run 0"
        assert answers(result.logs[1][1]) == ("hi",)


def _settled(log: str) -> list[dict[str, object]]:
    return [json.loads(line)["data"] for line in log.splitlines() if '"type":"job/settled"' in line]
