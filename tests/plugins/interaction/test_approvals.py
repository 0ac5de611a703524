"""Approvals end to end through the agent loop: a call that needs approval logs approval/asked and approval/decided,
a rejected call never runs (a marker file proves it) and the model gets the original's wording; the policies, the
answers a person gives, allowed-always, escalation out of bash's sandbox, and the slash commands that set them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.plugins.interaction import INTERACTION, policy_text
from dsh.runtime.kernel import Context
from dsh.runtime.tools import Approval, ApprovalRequest
from tests.plugins.hitl_host import bash_call, data_of, result_texts, run_turn, text, write_hooks

pytestmark = pytest.mark.anyio

ASK_HOOK = {
    "PreToolUse": [
        {
            "matcher": "bash",
            "hooks": [
                {
                    "type": "command",
                    "command": 'echo \'{"hookSpecificOutput":{"hookEventName":"PreToolUse",'
                    '"permissionDecision":"ask","permissionDecisionReason":"needs a person"}}\'',
                }
            ],
        }
    ]
}


def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    write_hooks(path, ASK_HOOK)
    return path


async def test_a_rejected_call_never_runs_and_the_model_is_told_in_the_originals_words(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    asked: list[ApprovalRequest] = []

    async def reject(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval("rejected", "not on a Friday")

    events, _ = await run_turn(tmp_path, ws, [bash_call("touch marker"), text("ok")], answer=reject)
    assert not (ws / "marker").exists()
    assert [(r.tool, r.call_id, r.reason) for r in asked] == [("bash", "c1", "needs a person")]
    (question,) = data_of(events, "approval/asked")
    assert question == {"id": question["id"], "toolName": "bash", "callId": "c1", "reason": "needs a person"}
    assert data_of(events, "approval/decided") == [
        {"id": question["id"], "outcome": "rejected", "message": "not on a Friday"}
    ]
    assert result_texts(events) == ['Error: the user rejected tool "bash": not on a Friday']


async def test_never_rejects_without_asking_anyone_and_says_so_up_front(tmp_path: Path) -> None:
    ws = workspace(tmp_path)

    async def must_not_ask(request: ApprovalRequest) -> Approval:
        raise AssertionError("the never policy asks no one")

    events, _ = await run_turn(
        tmp_path, ws, [bash_call("touch marker"), text("ok")], policy="never", answer=must_not_ask
    )
    assert not (ws / "marker").exists()
    assert [d["outcome"] for d in data_of(events, "approval/decided")] == ["rejected"]
    assert result_texts(events) == ['Error: the user rejected tool "bash"']
    snapshot = [d for d in data_of(events, "user/message") if "runtime context" in d["content"][0]["text"]]
    assert policy_text("never") in snapshot[0]["content"][0]["text"]


async def test_ask_with_no_one_to_answer_fails_closed(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    events, _ = await run_turn(tmp_path, ws, [bash_call("touch marker"), text("ok")])
    assert not (ws / "marker").exists()
    assert [d["outcome"] for d in data_of(events, "approval/decided")] == ["unavailable"]
    assert result_texts(events) == [
        'Error: tool "bash" requires approval, but no approval channel is available'
    ]


async def test_allowed_once_runs_the_call(tmp_path: Path) -> None:
    ws = workspace(tmp_path)

    async def allow(request: ApprovalRequest) -> Approval:
        return Approval("allowed-once")

    events, _ = await run_turn(tmp_path, ws, [bash_call("touch marker"), text("ok")], answer=allow)
    assert (ws / "marker").exists()
    assert [d["outcome"] for d in data_of(events, "approval/decided")] == ["allowed-once"]


async def test_auto_allow_grants_every_approval_unasked(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    events, _ = await run_turn(tmp_path, ws, [bash_call("touch marker"), text("ok")], policy="auto-allow")
    assert (ws / "marker").exists()
    assert [d["outcome"] for d in data_of(events, "approval/decided")] == ["allowed-once"]


async def test_allowed_always_covers_later_calls_of_the_tool_in_the_session(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    asked: list[str] = []

    async def always(request: ApprovalRequest) -> Approval:
        asked.append(request.call_id)
        return Approval("allowed-always")

    steps = [
        bash_call("touch one", "c1", sandbox_permissions="danger-full-access", justification="needed"),
        bash_call("touch two", "c2", sandbox_permissions="danger-full-access", justification="needed"),
        text("ok"),
    ]
    events, _ = await run_turn(
        tmp_path, ws, steps, answer=always, bash={"sandbox": "workspace-write", "escalation": True}
    )
    assert asked == ["c1"]
    assert (ws / "one").exists()
    assert (ws / "two").exists()
    assert len(data_of(events, "approval/asked")) == 1


async def test_an_escalation_is_asked_with_the_originals_reason_and_runs_unconfined_once_approved(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"

    async def allow(request: ApprovalRequest) -> Approval:
        return Approval("allowed-once")

    command = f"echo hi >> {outside}"
    steps = [
        bash_call(command, "c1"),
        bash_call(command, "c2", sandbox_permissions="danger-full-access", justification="the user asked"),
        text("ok"),
    ]
    events, _ = await run_turn(tmp_path, ws, steps, answer=allow, bash={"sandbox": "workspace-write"})
    assert [d["reason"] for d in data_of(events, "approval/asked")] == [
        "escalate sandbox to danger-full-access: the user asked"
    ]
    assert outside.read_text() == "hi\n"  # the confined call wrote to its private /tmp; the approved one here


async def test_slash_commands_set_the_knobs_and_are_logged_as_the_original_logs_them(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    replies: list[Any] = []

    async def commands(ctx: Context, agent: Any) -> None:
        service = ctx.get(INTERACTION)
        replies.append(await service.command(agent, "permission", " read-only"))
        replies.append(await service.command(agent, "approval", " sometimes"))

    events, _ = await run_turn(tmp_path, ws, [bash_call("touch marker"), text("ok")], before=commands)
    assert [(r.kind, r.text) for r in replies] == [
        ("success", "Permission preset: read-only."),
        ("error", 'unknown approval policy "sometimes" (available: ask, never, auto-allow)'),
    ]
    kinds = [
        e.type for e in events if e.type.startswith(("command/", "permission/", "sandbox/", "approval/"))
    ]
    assert kinds == [
        "command/run",
        "permission/preset",
        "sandbox/mode",
        "approval/policy",
        "command/done",
        "command/run",
        "command/done",
    ]
    assert data_of(events, "command/run")[0]["args"] == " read-only"
    assert not (ws / "marker").exists()  # the session's mode is read-only now: bash cannot write
    assert "Read-only file system" in result_texts(events)[0]
