"""ACP as a surface that answers approvals: a call that needs approval is sent to a real client as
`session/request_permission` with the protocol's options, and the client's choice decides it (a rejected call never
runs: a marker file proves it); `session/set_mode` switches the permission preset, logged as `/permission` is."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import AllowedOutcome, RequestPermissionResponse

from dsh.runtime.session import SessionStore
from tests.plugins.acp.harness import Recorder, dsh_acp
from tests.plugins.llm_openai.loopback import loopback
from tests.runtime.cli.helpers import answer, bash_call

pytestmark = pytest.mark.anyio

ASK_HOOK = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": 'echo \'{"hookSpecificOutput":{"hookEventName":"PreToolUse",'
                        '"permissionDecision":"ask","permissionDecisionReason":"check with a person"}}\'',
                    }
                ],
            }
        ]
    }
}


@dataclass
class Answering(Recorder):
    """A client that answers every permission request with `choice` and keeps what it was asked."""

    choice: str = "allow-once"
    asked: list[tuple[str, Any, list[Any]]] = field(default_factory=list)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append((session_id, tool_call, options))
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=self.choice, outcome="selected"))


def deployment(path: Path, base_url: str) -> Path:
    route = {"id": "local", "base_url": base_url}
    path.write_text(
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
    return path


async def _prompt(tmp_path: Path, client: Answering, workspace: Path) -> tuple[str, str]:
    async with loopback(bash_call("touch marker"), answer("done")) as server:
        config = deployment(tmp_path / "deployment.json", server.base_url)
        async with dsh_acp(tmp_path, config, client) as (conn, _):
            with anyio.fail_after(60):
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
                response = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    return session.session_id, str(response.stop_reason)


@pytest.mark.parametrize(
    ("choice", "outcome", "runs"), [("allow-once", "allowed-once", True), ("reject-once", "rejected", False)]
)
async def test_the_client_is_asked_and_its_choice_decides(
    tmp_path: Path, choice: str, outcome: str, runs: bool
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hooks.json").write_text(json.dumps(ASK_HOOK))
    client = Answering(choice=choice)
    session_id, stop = await _prompt(tmp_path, client, workspace)
    assert stop == "end_turn"
    assert (workspace / "marker").exists() is runs
    ((asked_session, tool_call, options),) = client.asked
    assert asked_session == session_id
    assert (tool_call.tool_call_id, tool_call.title) == ("call_1", "bash: check with a person")
    assert [(o.option_id, o.kind) for o in options] == [
        ("allow-once", "allow_once"),
        ("allow-always", "allow_always"),
        ("reject-once", "reject_once"),
    ]
    with SessionStore(tmp_path / "sessions.db") as store:
        decided = [json.loads(e.data) for e in store.events(session_id, types=("approval/decided",))]
    assert [d["outcome"] for d in decided] == [outcome]


async def test_set_mode_switches_the_permission_preset(tmp_path: Path) -> None:
    client = Answering()
    async with loopback() as server:
        config = deployment(tmp_path / "deployment.json", server.base_url)
        async with dsh_acp(tmp_path, config, client) as (conn, _):
            with anyio.fail_after(60):
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                # no preset in force yet: the session is under the deployment's own settings, never a preset's
                assert session.modes is not None
                assert session.modes.current_mode_id == "custom"
                assert [m.id for m in session.modes.available_modes] == [
                    "custom",
                    "read-only",
                    "workspace-write",
                    "danger-full-access",
                ]
                await conn.set_session_mode(session_id=session.session_id, mode_id="read-only")
                resumed = await conn.resume_session(cwd=str(tmp_path), session_id=session.session_id)
                assert resumed.modes is not None
                assert resumed.modes.current_mode_id == "read-only"
                assert "custom" not in [m.id for m in resumed.modes.available_modes]
                with pytest.raises(RequestError, match='"custom" is what a session is under'):
                    await conn.set_session_mode(session_id=session.session_id, mode_id="custom")
                with pytest.raises(RequestError, match='unknown preset "sideways"'):
                    await conn.set_session_mode(session_id=session.session_id, mode_id="sideways")
    with SessionStore(tmp_path / "sessions.db") as store:
        kinds = [e.type for e in store.events(session.session_id)]
    assert kinds[:5] == [
        "command/run",
        "permission/preset",
        "sandbox/mode",
        "approval/policy",
        "command/done",
    ]
    assert kinds[5:] == [
        "command/run",
        "command/done",
    ]  # the unknown preset: refused, and logged as /permission
