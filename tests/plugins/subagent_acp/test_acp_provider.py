"""The `acp` subagent provider end to end: a parent agent (its model scripted) calls the `subagent_acp` tool, whose
child is a real `dsh acp --replay <recording>` process (no key, no network) or a small fake ACP agent; the answer,
a failure or a cancellation comes back as the tool result, and no process outlives the call."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from dsh.plugins import subagent, subagent_acp, tool_subagent
from dsh.plugins.subagent import SUBAGENTS, SubagentProvider, SubagentRequest
from dsh.plugins.subagent_acp import AcpConfig, AcpRun, acp_provider
from dsh.runtime.agent import AGENTS, AgentOptions
from dsh.runtime.kernel import ConfigError, Context
from dsh.runtime.session import STORE, SessionStore, SessionStoreProtocol
from dsh.runtime.tools import TOOLS
from tests.plugins.subagent.harness import data_of
from tests.runtime.agent.harness import MODEL, PROVIDER, ScriptedAdapter, calls, host, text
from tests.runtime.cli.helpers import DSH

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
ACP_AGENT = ROOT / "examples" / "acp-agent.yml"
HARNESS = ROOT / "fixtures" / "harness"
FAKE_AGENT = Path(__file__).with_name("fake_agent.py")


def dsh_acp(tmp_path: Path, recording: str) -> tuple[str, ...]:
    """`dsh acp` serving `recording` (a fixtures/harness scenario) with a store of its own in tmp_path."""
    return (
        *DSH,
        "acp",
        "--config",
        str(ACP_AGENT),
        "--store",
        str(tmp_path / "child.db"),
        "--replay",
        str(HARNESS / recording),
    )


def fake_agent(mode: str) -> tuple[str, ...]:
    return (sys.executable, str(FAKE_AGENT), mode)


def delegate(prompt: str = "Reply with exactly the word: PONG.") -> list[Any]:
    arguments = json.dumps({"description": "Ask a helper", "prompt": prompt})
    return calls(("c1", "subagent_acp", arguments))


def capturing(provider: SubagentProvider, runs: list[AcpRun]) -> SubagentProvider:
    """`provider`, keeping every run it starts (to check its process after the call)."""

    @asynccontextmanager
    async def start(request: SubagentRequest) -> AsyncIterator[Any]:
        async with provider.start(request) as run:
            assert isinstance(run, AcpRun)
            runs.append(run)
            yield run

    return SubagentProvider(provider.name, provider.inherits_parent_context, start)


@contextmanager
def acp_host(
    tmp_path: Path, adapter: ScriptedAdapter, config: AcpConfig, runs: list[AcpRun]
) -> Iterator[Context]:
    """The agent-loop host with the subagent service, the `acp` provider (runs captured) and its tool."""
    with host(tmp_path, adapter) as ctx:
        ctx.plugin(subagent.plugin)
        ctx.get(SUBAGENTS).register(capturing(acp_provider(config), runs))
        ctx.plugin(tool_subagent.plugin, {"provider": "acp"})
        yield ctx


def options(tmp_path: Path) -> AgentOptions:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return AgentOptions(provider=PROVIDER, model=MODEL, cwd=workspace)


def tool_results(store: SessionStoreProtocol, session_id: str) -> list[dict[str, Any]]:
    return data_of(store, session_id, "tool/result")


def result_text(data: dict[str, Any]) -> str:
    return str(data["message"]["content"][0]["content"][0]["text"])


def is_error(data: dict[str, Any]) -> bool:
    return bool(data["message"]["content"][0]["isError"])


async def delegate_once(
    tmp_path: Path,
    command: Sequence[str],
    *,
    prompt: str = "Reply with exactly the word: PONG.",
    **config: Any,
) -> tuple[dict[str, Any], str, AcpRun]:
    """The parent asks the child once and answers; returns its tool result, its final answer and the run."""
    adapter = ScriptedAdapter([delegate(prompt), text("The helper answered.")])
    runs: list[AcpRun] = []
    with acp_host(tmp_path, adapter, AcpConfig(command=tuple(command), **config), runs) as ctx:
        async with ctx.get(AGENTS).create(options(tmp_path)) as parent:
            with anyio.fail_after(60):
                outcome = await parent.run("Ask the helper.")
        (result,) = tool_results(ctx.get(STORE), parent.id)
    assert adapter.unserved() == {}
    (run,) = runs
    assert run.process is None or run.process.returncode is not None, "the child process is gone"
    return result, outcome.kind, run


async def test_a_dsh_acp_child_answers_from_its_recording_as_the_tool_result(tmp_path: Path) -> None:
    result, kind, run = await delegate_once(tmp_path, dsh_acp(tmp_path, "text-turn"))
    assert kind == "completed"
    assert (result_text(result), is_error(result)) == ("PONG", False)
    meta = result["meta"]
    assert meta["provider"] == "acp"
    assert meta["agent"].startswith("dsh ")
    assert meta["stopReason"] == "end_turn"
    assert meta["sessionId"] == run.session_id
    assert run.process is not None
    assert run.process.returncode == 0, "closing its stdin ended it cleanly"
    # the child's session lives in its own store, in the parent's workspace
    with SessionStore(tmp_path / "child.db") as child_store:
        (child,) = child_store.sessions()
        kinds = [
            json.loads(e.data)["reason"]["kind"] for e in child_store.events(child.id, types=("turn/end",))
        ]
    assert child.id == run.session_id
    assert child.cwd == str(tmp_path / "workspace")
    assert kinds == ["completed"]


async def test_a_child_that_exits_at_once_is_an_error_result_and_the_parent_goes_on(tmp_path: Path) -> None:
    command = (sys.executable, "-c", "import sys; sys.stderr.write('no agent here\\n'); sys.exit(3)")
    result, kind, run = await delegate_once(tmp_path, command)
    assert kind == "completed"
    assert is_error(result)
    assert result_text(result) == (
        "Error: subagent run failed\nDiagnostic: the ACP agent exited with code 3 during initialize; its stderr "
        "ended with:\nno agent here"
    )
    assert result["meta"] == {"provider": "acp", "exitCode": 3}
    assert run.id.startswith("acp:")


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the supervisor is Linux's (PR_SET_PDEATHSIG)"
)
async def test_the_child_runs_under_the_supervisor_that_dies_with_dsh(tmp_path: Path) -> None:
    """The ACP agent is a tool's child like bash's commands: its parent is dsh.runtime.tools.guard's supervisor, which
    the kernel signals when dsh dies (tests/runtime/tools/test_guard.py proves what it then kills)."""
    seen = tmp_path / "parent-cmdline"
    script = f"import os, sys; open({str(seen)!r}, 'wb').write(open(f'/proc/{{os.getppid()}}/cmdline', 'rb').read()); sys.exit(3)"
    result, _, _ = await delegate_once(tmp_path, (sys.executable, "-c", script))
    assert is_error(result)
    parent = seen.read_bytes().split(b"\0")
    assert any(part.endswith(b"runtime/tools/guard.py") for part in parent), parent
    assert str(os.getpid()).encode() in parent, "bound to this process"


async def test_a_command_that_cannot_start_is_an_error_result(tmp_path: Path) -> None:
    result, kind, run = await delegate_once(tmp_path, (str(tmp_path / "no-such-agent"), "acp"))
    assert kind == "completed"
    assert is_error(result)
    assert result_text(result).startswith(
        f"Error: subagent run failed\nDiagnostic: the ACP agent could not start ({tmp_path / 'no-such-agent'} acp): "
    )
    assert "No such file or directory" in result_text(result)
    assert run.id == "acp:not-started"


async def test_a_json_rpc_error_is_an_error_result(tmp_path: Path) -> None:
    """The recording's turn fails (a provider error): `dsh acp` answers the prompt with JSON-RPC -32603."""
    result, kind, _ = await delegate_once(tmp_path, dsh_acp(tmp_path, "error-finish"))
    assert kind == "completed"
    assert is_error(result)
    text_ = result_text(result)
    assert text_.startswith(
        "Error: subagent run failed\nDiagnostic: the ACP agent answered session/prompt with JSON-RPC error "
        "-32603: Internal error: turn failed: "
    ), text_
    assert result["error"]["code"] == "SUBAGENT_FAILED"


async def test_a_child_that_crashes_mid_prompt_keeps_its_partial_answer(tmp_path: Path) -> None:
    result, _, _ = await delegate_once(tmp_path, fake_agent("crash"))
    assert is_error(result)
    assert result_text(result) == (
        "Error: subagent run failed\nDiagnostic: the ACP agent exited with code 1 during session/prompt; its "
        "stderr ended with:\nfake agent: out of cheese\nPartial output before the run ended:\npartial thoughts"
    )
    assert result["meta"] == {
        "provider": "acp",
        "agent": "fake 9",
        "sessionId": "fake-session-1",
        "exitCode": 1,
    }


async def test_the_answer_is_what_the_child_says_after_its_last_tool_call(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    result, _, _ = await delegate_once(tmp_path, fake_agent("narrate"), env={"FAKE_AGENT_LOG": str(log)})
    assert (result_text(result), is_error(result)) == ("There are 3 files.", False)
    assert log.read_text().split() == ["initialize", "session/new", "session/prompt", "eof"]


async def test_the_child_gets_the_configured_environment_and_no_other_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-not-for-children")
    monkeypatch.setenv("FAKE_AGENT_REPORT", "from the parent's environment")
    log = tmp_path / "agent.log"
    result, _, _ = await delegate_once(
        tmp_path, fake_agent("environment"), env={"FAKE_AGENT_LOG": str(log), "NAMED": "given"}
    )
    assert result_text(result) == "DEEPSEEK_API_KEY=None FAKE_AGENT_REPORT=None NAMED=given"


@pytest.mark.parametrize(("permissions", "chosen"), [("reject", "no"), ("allow", "yes")])
async def test_permission_requests_are_answered_as_configured(
    tmp_path: Path, permissions: str, chosen: str
) -> None:
    result, _, _ = await delegate_once(tmp_path, fake_agent("permission"), permissions=permissions)
    assert result_text(result) == f"permission: {chosen}"


async def test_cancelling_the_parent_mid_call_cancels_the_child_and_ends_its_process(tmp_path: Path) -> None:
    """`harness/cancel` hangs mid-stream once it touched `.dsh-stream-ready` in the workspace: the parent is
    cancelled then. The child's turn is cancelled (logged aborted in its own store) and its process is gone."""
    adapter = ScriptedAdapter([delegate()])
    runs: list[AcpRun] = []
    config = AcpConfig(command=dsh_acp(tmp_path, "cancel"))
    work = options(tmp_path)
    assert work.cwd is not None
    ready = work.cwd / ".dsh-stream-ready"
    with acp_host(tmp_path, adapter, config, runs) as ctx:
        async with ctx.get(AGENTS).create(work) as parent:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    group.start_soon(parent.run, "Ask the helper.")
                    while not ready.exists():  # noqa: ASYNC110  # the child's only signal is a file
                        await anyio.sleep(0.02)
                    group.cancel_scope.cancel()
        (result,) = tool_results(ctx.get(STORE), parent.id)
        ends = data_of(ctx.get(STORE), parent.id, "turn/end")
    assert result["error"]["code"] == "ABORTED"
    assert ends[-1]["reason"]["kind"] == "aborted"
    (run,) = runs
    assert run.process is not None
    assert run.process.returncode is not None, "the child process is gone"
    with SessionStore(tmp_path / "child.db") as child_store:
        (child,) = child_store.sessions()
        kinds = [
            json.loads(e.data)["reason"]["kind"] for e in child_store.events(child.id, types=("turn/end",))
        ]
    assert kinds == ["aborted"]


async def test_a_child_deaf_to_cancel_and_sigterm_is_killed_with_what_it_started(tmp_path: Path) -> None:
    """The fake agent ignores session/cancel, the end of its input and SIGTERM, and has started a grandchild:
    after `stop_grace_s` twice both are killed (the agent leads its own process group)."""
    log = tmp_path / "agent.log"
    adapter = ScriptedAdapter([delegate()])
    runs: list[AcpRun] = []
    config = AcpConfig(command=fake_agent("stubborn"), env={"FAKE_AGENT_LOG": str(log)}, stop_grace_s=0.2)
    with acp_host(tmp_path, adapter, config, runs) as ctx:
        async with ctx.get(AGENTS).create(options(tmp_path)) as parent:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    group.start_soon(parent.run, "Ask the helper.")
                    while "grandchild" not in (log.read_text() if log.exists() else ""):  # noqa: ASYNC110
                        await anyio.sleep(0.02)
                    group.cancel_scope.cancel()
    lines = log.read_text().splitlines()
    grandchild = int(next(line for line in lines if line.startswith("grandchild")).split()[1])
    assert lines[-2:] == ["session/cancel", "eof"], "session/cancel first, then its stdin closes"
    (run,) = runs
    assert run.process is not None
    assert run.process.returncode == -9
    with anyio.fail_after(10):
        while _alive(grandchild):  # noqa: ASYNC110  # another process's exit: nothing to wait on but polling
            await anyio.sleep(0.02)


def _alive(pid: int) -> bool:
    """Whether `pid` is a process that has not exited (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_the_tool_tells_the_model_the_child_sees_nothing_of_this_conversation(tmp_path: Path) -> None:
    with host(tmp_path, ScriptedAdapter()) as ctx:
        ctx.plugin(subagent.plugin)
        ctx.plugin(subagent_acp.plugin, {"command": ["dsh", "acp"]})
        ctx.plugin(tool_subagent.plugin, {"provider": "acp"})
        provider = ctx.get(SUBAGENTS).get("acp")
        tool = ctx.get(TOOLS).get("subagent_acp")
    assert provider is not None
    assert provider.inherits_parent_context is False
    assert tool is not None
    assert "does not see this conversation" in tool.description
    assert "include everything it needs" in tool.parameters["properties"]["prompt"]["description"]


@pytest.mark.parametrize(
    ("config", "path", "words"),
    [
        ({"command": []}, "$.command", "command must name"),
        (
            {"command": ["dsh", "acp"], "cwd": "relative/dir"},
            "$",
            'cwd must be an absolute path, got "relative/dir"',
        ),
        ({"command": ["dsh"], "extra": 1}, "$", "extra"),
    ],
)
def test_bad_config_names_the_plugin_and_the_key(
    tmp_path: Path, config: dict[str, Any], path: str, words: str
) -> None:
    with host(tmp_path, ScriptedAdapter()) as ctx:
        ctx.plugin(subagent.plugin)
        with pytest.raises(ConfigError) as raised:
            ctx.plugin(subagent_acp.plugin, config, id="acp")
    assert words in str(raised.value)
    assert "acp" in str(raised.value)


def test_stop_reasons_map_to_the_subagent_ones() -> None:
    assert [
        subagent_acp.stop_reason(r)
        for r in ("end_turn", "max_tokens", "refusal", "cancelled", "max_turn_requests", "new")
    ] == ["completed", "max-tokens", "refusal", "aborted", "error", "error"]
