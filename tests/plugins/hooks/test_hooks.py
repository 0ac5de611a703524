"""Hooks end to end through the agent loop, in both dialects and at every point dsh runs (PreToolUse, PostToolUse,
UserPromptSubmit, Stop), and the hooks that misbehave (hang, crash, exit non-zero, print garbage): each is a logged
result and the turn goes on. Plus the protocol's pieces: decoding, matchers, merging, the environment policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.plugins.hooks import matches, merge, parse_config, parse_output, run_command
from dsh.runtime.agent import AGENTS, AgentOptions
from dsh.runtime.session import STORE
from tests.plugins.hitl_host import bash_call, data_of, result_texts, run_turn, text, write_hooks
from tests.runtime.agent.harness import MODEL, PROVIDER

pytestmark = pytest.mark.anyio


def command_hook(command: str, matcher: str | None = "bash", **extra: Any) -> list[dict[str, Any]]:
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": command, **extra}]}
    if matcher is not None:
        group["matcher"] = matcher
    return [group]


def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("dialect", "file"),
    [("claude-code", "hooks.json"), ("codex", "codex-hooks.json")],
    ids=["claude-code", "codex"],
)
async def test_a_pre_tool_hook_that_exits_2_denies_the_call_with_its_stderr(
    tmp_path: Path, dialect: str, file: str
) -> None:
    workspace = ws(tmp_path)
    write_hooks(
        workspace,
        {"PreToolUse": command_hook("cat > payload.json; echo 'no bash today' >&2; exit 2")},
        name=file,
    )
    events, _ = await run_turn(tmp_path, workspace, [bash_call("touch marker"), text("ok")])
    assert not (workspace / "marker").exists()
    assert result_texts(events) == ["Error: no bash today"]
    (invoked,) = data_of(events, "hook/invoked")
    assert invoked == {
        "turn": 1,
        "point": "PreToolUse",
        "dialect": dialect,
        "handlerId": f"{dialect}:PreToolUse:1",
        "matcher": "bash",
    }
    (result,) = data_of(events, "hook/result")
    assert (result["decision"], result["exitCode"], result["stderrSummary"]) == ("block", 2, "no bash today")
    stdin = (workspace / "payload.json").read_text()
    payload = json.loads(stdin)
    assert payload["hook_event_name"] == "PreToolUse"
    assert payload["tool_name"] == "bash"
    assert payload["tool_use_id"] == "c1"
    if dialect == "claude-code":
        assert stdin.endswith("\n")
        assert payload["tool_input"] == {"command": "touch marker", "description": "run it"}
    else:
        assert not stdin.endswith("\n")
        assert payload["tool_input"] == {"command": "touch marker"}
        assert payload["turn_id"] == "1"


async def test_a_matcher_that_does_not_select_the_tool_runs_nothing(tmp_path: Path) -> None:
    workspace = ws(tmp_path)
    write_hooks(workspace, {"PreToolUse": command_hook("exit 2", matcher="read|write")})
    events, _ = await run_turn(tmp_path, workspace, [bash_call("touch marker"), text("ok")])
    assert (workspace / "marker").exists()
    assert data_of(events, "hook/invoked") == []


async def test_codex_ignores_ask_where_claude_code_asks(tmp_path: Path) -> None:
    workspace = ws(tmp_path)
    ask = 'echo \'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}\''
    write_hooks(workspace, {"PreToolUse": command_hook(ask)}, name="codex-hooks.json")
    events, _ = await run_turn(tmp_path, workspace, [bash_call("touch marker"), text("ok")], policy="never")
    assert (workspace / "marker").exists()  # only blocking decisions count in Codex's dialect
    assert data_of(events, "approval/asked") == []
    assert [d["decision"] for d in data_of(events, "hook/result")] == ["ask"]


async def test_post_tool_context_enters_the_next_step_from_the_hook(tmp_path: Path) -> None:
    workspace = ws(tmp_path)
    context = 'echo \'{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"checked"}}\''
    write_hooks(workspace, {"PostToolUse": command_hook(context)})
    events, _ = await run_turn(tmp_path, workspace, [bash_call("echo hi"), text("ok")])
    assert result_texts(events) == ["hi\n"]
    messages = [m for m in data_of(events, "user/message") if m["source"]["kind"] == "plugin"]
    spliced = [m for m in messages if m["source"].get("plugin") == "hooks-claude-code"]
    assert [m["content"][0]["text"] for m in spliced] == ["checked"]


async def test_a_post_tool_block_replaces_the_result_with_its_reason(tmp_path: Path) -> None:
    workspace = ws(tmp_path)
    write_hooks(workspace, {"PostToolUse": command_hook("echo 'output withheld' >&2; exit 2")})
    events, _ = await run_turn(tmp_path, workspace, [bash_call("echo secret"), text("ok")])
    assert result_texts(events) == ["output withheld"]


async def test_user_prompt_submit_blocks_the_turn_or_adds_context(tmp_path: Path) -> None:
    workspace = ws(tmp_path)
    write_hooks(workspace, {"UserPromptSubmit": command_hook("echo 'not that' >&2; exit 2", matcher=None)})
    events, outcome = await run_turn(tmp_path, workspace, [])
    assert outcome.kind == "blocked"
    assert json.loads(next(e.data for e in events if e.type == "turn/end"))["reason"]["message"] == "not that"

    again = tmp_path / "again"
    again.mkdir()
    write_hooks(
        again,
        {"UserPromptSubmit": command_hook("echo 'today is Friday'", matcher=None)},
        name="codex-hooks.json",
    )
    (tmp_path / "store2").mkdir()
    events, _ = await run_turn(tmp_path / "store2", again, [text("ok")])
    texts = [m["content"][0]["text"] for m in data_of(events, "user/message")]
    # plain stdout is context in Codex's dialect, entering right after the prompt
    assert texts[:2] == ["go", "today is Friday"]
    assert data_of(events, "hook/invoked") == []  # Codex's prompt hook runs before the turn: no hook/* pair


async def test_a_stop_hook_that_blocks_keeps_the_turn_going_with_its_reason(tmp_path: Path) -> None:
    workspace = ws(tmp_path)
    once = "if [ -f fired ]; then exit 0; fi; touch fired; echo 'also say SECOND' >&2; exit 2"
    write_hooks(workspace, {"Stop": command_hook(once, matcher=None)})
    events, outcome = await run_turn(tmp_path, workspace, [text("FIRST"), text("SECOND")])
    assert outcome.kind == "completed"
    assert [d["decision"] for d in data_of(events, "hook/result")] == ["block", "pass"]
    steering = [
        m for m in data_of(events, "user/message") if m["source"].get("plugin") == "hooks-claude-code"
    ]
    assert [m["content"][0]["text"] for m in steering] == ["also say SECOND"]


@pytest.mark.parametrize(
    ("command", "exit_code", "stderr"),
    [
        ("sleep 30", None, "[timed out after 300ms]"),  # hangs: killed at its timeout
        ("kill -9 $$", None, None),  # crashes: no exit code of its own
        ("echo oops >&2; exit 1", 1, "oops"),  # a non-blocking error
        ("echo '{not json'", 0, None),  # garbage on stdout
        ("echo '[1, 2]'; echo '{\"decision\": \"deny\"}'", 0, None),  # JSON that is not a decision
    ],
    ids=["hangs", "crashes", "exits-1", "garbage", "not-a-decision"],
)
async def test_a_hook_that_misbehaves_is_a_logged_result_and_the_call_goes_on(
    tmp_path: Path, command: str, exit_code: int | None, stderr: str | None
) -> None:
    workspace = ws(tmp_path)
    # only the hanging one may reach its timeout (the others get a minute: the machine may be busy)
    timeout = 0.3 if command.startswith("sleep") else 60
    write_hooks(workspace, {"PreToolUse": command_hook(command, timeout=timeout)})
    events, outcome = await run_turn(tmp_path, workspace, [bash_call("touch marker"), text("ok")])
    assert outcome.kind == "completed"
    assert (workspace / "marker").exists()
    (result,) = data_of(events, "hook/result")
    assert result["decision"] == "pass"
    assert result.get("exitCode") == exit_code
    assert result.get("stderrSummary") == stderr


async def test_a_hook_gets_the_environment_bash_gets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HITL_API_KEY", "sk-very-secret-value")
    monkeypatch.setenv("HITL_PLAIN", "visible")
    code, stdout, _ = await run_command(
        'echo "[$HITL_API_KEY][$HITL_PLAIN]"; cat',
        stdin=b"payload",
        cwd=tmp_path,
        env=_child_env(),
        timeout_s=10,
    )
    assert (code, stdout) == (0, "[][visible]\npayload")


def _child_env() -> dict[str, str]:
    import os

    from dsh.runtime.tools import EnvPolicy, ToolEnvironment

    return ToolEnvironment().child_env(os.environ, EnvPolicy())


def test_decoding_follows_the_protocol() -> None:
    blocked = parse_output(2, "", "  nope \n")
    assert (blocked.decision, blocked.reason) == ("block", "nope")
    ask = parse_output(
        0,
        '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"r"}}',
        "",
        "PreToolUse",
    )
    assert (ask.decision, ask.reason) == ("ask", "r")
    other_event = parse_output(
        0, '{"hookSpecificOutput":{"hookEventName":"Stop","permissionDecision":"deny"}}', "", "PreToolUse"
    )
    assert other_event.decision is None
    assert parse_output(0, '{"decision":"deny"}', "").decision is None  # only approve/block at the top level
    assert parse_output(1, '{"decision":"block"}', "").decision is None  # JSON counts on exit 0 only
    assert merge([parse_output(0, '{"decision":"approve"}', ""), ask, blocked]).decision == "deny"
    assert merge([ask, parse_output(0, "", "")]).reason == "r"


def test_matchers() -> None:
    assert matches(None, "bash")
    assert matches("*", "bash")
    assert matches("", "bash")
    assert matches("read|bash", "bash")
    assert not matches("bas", "bash")  # a literal is exact
    assert matches("^ba.*", "bash")  # anything else is an unanchored regex
    assert matches("mcp__.*", "mcp__github__x")
    assert not matches("([", "bash")  # an invalid regex matches nothing


def test_config_files_in_either_dialect_skip_hooks_that_are_not_commands() -> None:
    parsed = parse_config(
        {
            "hooks": {
                "Stop": [
                    {"hooks": [{"type": "prompt", "prompt": "x"}, {"type": "command", "command": "true"}]}
                ]
            }
        },
        where="hooks.json",
    )
    assert [h.command for h in parsed["Stop"][0].hooks] == ["true"]
    with pytest.raises(ValueError, match=r"hooks.json: hooks.Stop must be a list"):
        parse_config({"hooks": {"Stop": {}}}, where="hooks.json")


_ADD_CONTEXT = (
    "cat > {record}; printf '%s' "
    '\'{{"hookSpecificOutput": {{"hookEventName": "{point}", "additionalContext": "{context}"}}}}\''
)


async def test_session_start_context_joins_the_first_prompt_and_logs_no_hook_pair(tmp_path: Path) -> None:
    workspace = ws(tmp_path)
    record = tmp_path / "payload.json"
    command = _ADD_CONTEXT.format(record=record, point="SessionStart", context="the build is make -j2")
    write_hooks(
        workspace,
        {
            "SessionStart": command_hook(command, matcher="startup")
            + command_hook("touch resumed-ran", matcher="resume")
        },
    )
    events, _ = await run_turn(tmp_path, workspace, [text("ok")])
    messages = data_of(events, "user/message")
    assert [m["content"][0]["text"] for m in messages[:2]] == ["go", "the build is make -j2"]
    assert messages[1]["source"] == {"kind": "plugin", "plugin": "hooks-claude-code"}
    assert data_of(events, "hook/invoked") == []  # outside a turn, as the original
    payload = json.loads(record.read_text())
    assert payload["hook_event_name"] == "SessionStart"
    assert payload["source"] == "startup"
    assert payload["cwd"] == str(workspace)
    assert not (workspace / "resumed-ran").exists()  # its matcher is the source


async def test_codex_session_start_takes_plain_stdout_as_context(tmp_path: Path) -> None:
    workspace = ws(tmp_path)
    write_hooks(
        workspace,
        {"SessionStart": command_hook("echo 'repo uses uv'", matcher=None)},
        name="codex-hooks.json",
    )
    events, _ = await run_turn(tmp_path, workspace, [text("ok")])
    texts = [m["content"][0]["text"] for m in data_of(events, "user/message")]
    assert texts[:2] == ["go", "repo uses uv"]


async def test_a_child_gets_subagent_start_context_and_its_close_runs_subagent_stop(tmp_path: Path) -> None:
    workspace = ws(tmp_path)
    record = tmp_path / "start.json"
    start = _ADD_CONTEXT.format(record=record, point="SubagentStart", context="you are a child")
    write_hooks(
        workspace,
        {
            "SubagentStart": command_hook(start, matcher="general-purpose"),
            "SubagentStop": command_hook(f"cat > {tmp_path / 'stop.json'}", matcher=None),
            "SessionStart": command_hook("touch session-start-ran", matcher=None),
        },
    )
    child_events: list[Any] = []

    async def child(ctx: Any, parent: Any) -> None:
        (workspace / "session-start-ran").unlink()  # the parent's own SessionStart ran
        options = AgentOptions(provider=PROVIDER, model=MODEL)
        async with ctx.get(AGENTS).create(options, parent=parent) as kid:
            await kid.run("child task")
            await kid.log.flush()
            child_events.extend(ctx.get(STORE).events(kid.id))
        assert not (workspace / "session-start-ran").exists()  # a child runs SubagentStart instead

    await run_turn(tmp_path, workspace, [text("child done"), text("parent done")], before=child)
    texts = [m["content"][0]["text"] for m in data_of(child_events, "user/message")]
    assert texts[:2] == ["child task", "you are a child"]
    started = json.loads(record.read_text())
    assert started["hook_event_name"] == "SubagentStart"
    assert started["agent_type"] == "general-purpose"
    stopped = json.loads((tmp_path / "stop.json").read_text())
    assert stopped["hook_event_name"] == "SubagentStop"
    assert stopped["stop_hook_active"] is False


async def test_a_workspace_s_own_hooks_run_only_once_it_is_trusted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A cloned repository's hooks.json would run its commands on the user's machine, outside any sandbox.
    workspace = ws(tmp_path)
    write_hooks(workspace, {"PreToolUse": command_hook("touch ran; echo 'no' >&2; exit 2")})
    write_hooks(
        workspace, {"SessionStart": command_hook("touch ran-codex", matcher=None)}, name="codex-hooks.json"
    )
    events, _ = await run_turn(
        tmp_path, workspace, [bash_call("echo hi"), text("ok")], hook_config={"project_config": False}
    )
    assert not (workspace / "ran").exists()
    assert not (workspace / "ran-codex").exists()
    assert result_texts(events) == ["hi\n"]
    assert data_of(events, "hook/invoked") == []
    ignored = [r.getMessage() for r in caplog.records if "is not run" in r.getMessage()]
    assert len(ignored) == 2  # each file said once, not at every point
    assert "`project_config: true`" in ignored[0]
