"""`dsh chat` as a surface that answers approvals, in a pseudo-terminal against a loopback model: a workspace's
Claude Code hooks.json asks before bash runs, the turn waits visibly, a typed `r <reason>` rejects (the call never
runs: a marker file proves it, and the model is told the reason) and `o` allows once; `/approval` and `/permission`
are logged as commands. And `dsh run`: with no terminal, `ask` rejects and says so."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from dsh.runtime.session import SessionStore
from tests.plugins.llm_openai.loopback import loopback
from tests.runtime.cli.helpers import DSH, answer, bash_call, plain_env
from tests.runtime.cli.test_chat_cmd import PROMPT, Terminal

pytestmark = pytest.mark.anyio

ASK = (
    'echo \'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask",'
    '"permissionDecisionReason":"check with a person"}}\''
)


def setup(tmp_path: Path, base_url: str) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    hooks = {"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": ASK}]}]}}
    (workspace / "hooks.json").write_text(json.dumps(hooks))
    route = {"id": "local", "base_url": base_url}
    config = tmp_path / "deployment.json"
    config.write_text(
        json.dumps(
            {
                "model": "m",
                "provider": "local",
                "plugins": [
                    {"id": "prompt", "use": "prompt", "config": {"persona": "You are a test agent."}},
                    {"id": "llm", "use": "llm"},
                    {"id": "openai", "use": "llm_openai", "config": {"providers": [route]}},
                    {"id": "tools", "use": "tools"},
                    {"id": "interaction", "use": "interaction"},
                    {"id": "hooks", "use": "hooks", "config": {"project_config": True}},
                    {"id": "bash", "use": "tool_bash"},
                    {"id": "agent", "use": "agent"},
                ],
            }
        )
    )
    return workspace, config


async def test_chat_asks_inline_and_a_rejected_call_never_runs(tmp_path: Path) -> None:
    replies = [
        bash_call("touch marker"),
        answer("understood"),
        bash_call("touch marker", call_id="call_2"),
        answer("done"),
    ]
    async with loopback(*replies) as server:
        workspace, config = setup(tmp_path, server.base_url)
        store = tmp_path / "sessions.db"
        term = Terminal("--config", str(config), "--store", str(store), cwd=workspace)
        session = (await term.expect(r"session (\S+) · new"))[1]
        await term.expect_exact(PROMPT)
        term.send("/approval ask")
        await term.expect_exact("Approval policy: ask.")
        await term.expect_exact(PROMPT)

        term.send("make a marker")
        await term.expect_exact("approval needed: bash")
        await term.expect_exact("check with a person")
        await term.expect_exact("the turn waits")
        term.send("r not on a Friday")
        await term.expect_exact("understood")
        await term.expect_exact(PROMPT)
        assert not (workspace / "marker").exists()

        term.send("try again")
        await term.expect_exact("approval needed: bash")
        term.send("o")
        await term.expect_exact("done")
        await term.expect_exact(PROMPT)
        term.send("/exit")
        assert await term.wait_exit() == 0
    assert (workspace / "marker").exists()
    with SessionStore(store) as opened:
        events = list(opened.events(session))
    decided = [json.loads(e.data) for e in events if e.type == "approval/decided"]
    assert [(d["outcome"], d.get("message")) for d in decided] == [
        ("rejected", "not on a Friday"),
        ("allowed-once", None),
    ]
    results = [
        json.loads(e.data)["message"]["content"][0]["content"][0]["text"]
        for e in events
        if e.type == "tool/result"
    ]
    assert results[0] == 'Error: the user rejected tool "bash": not on a Friday'
    assert [e.type for e in events[:3]] == ["command/run", "approval/policy", "command/done"]


async def test_run_with_no_terminal_rejects_an_ask_and_says_so(tmp_path: Path) -> None:
    async with loopback(bash_call("touch marker"), answer("ok")) as server:
        workspace, config = setup(tmp_path, server.base_url)
        result = await anyio.run_process(
            [
                *DSH,
                "run",
                "make a marker",
                "--approval",
                "ask",
                "--config",
                str(config),
                "--store",
                str(tmp_path / "s.db"),
                "--cwd",
                str(workspace),
            ],
            stdin=None,
            input=b"",
            env=plain_env(),
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()
    assert not (workspace / "marker").exists()
    assert "no terminal to ask: rejected" in result.stderr.decode()


async def test_run_refuses_an_unknown_policy(tmp_path: Path) -> None:
    async with loopback() as server:
        _, config = setup(tmp_path, server.base_url)
        result = await anyio.run_process(
            [
                *DSH,
                "run",
                "hi",
                "--approval",
                "sometimes",
                "--config",
                str(config),
                "--store",
                str(tmp_path / "s.db"),
            ],
            env=plain_env(),
            check=False,
        )
    assert result.returncode == 2
    assert 'unknown approval policy "sometimes" (available: ask, never, auto-allow)' in result.stderr.decode()
