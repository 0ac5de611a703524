"""Approvals and questions answered in the browser: a workspace's Claude Code hooks.json asks before bash runs, the
page shows the waiting call, Reject (with a reason) keeps the call from running (a marker file proves it) and Allow
once lets it run; an `ask_user_question` call waits for the page's answer. The model is a scripted one (replies.yml),
so the turn goes exactly as written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import start_web, stop

ASK = (
    'echo \'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask",'
    '"permissionDecisionReason":"check with a person"}}\''
)


def _deployment(tmp_path: Path, replies: list[dict[str, Any]]) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    hooks = {"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": ASK}]}]}}
    (workspace / "hooks.json").write_text(json.dumps(hooks))
    (tmp_path / "replies.yml").write_text(json.dumps({"replies": replies}))
    config = tmp_path / "deployment.json"
    scripted = {"replies": str(tmp_path / "replies.yml"), "providers": ["scripted"]}
    config.write_text(
        json.dumps(
            {
                "model": "m",
                "provider": "scripted",
                "plugins": [
                    {"id": "prompt", "use": "prompt", "config": {"persona": "You are a test agent."}},
                    {"id": "llm", "use": "llm"},
                    {"id": "model", "use": "dsh.replay:scripted_plugin", "config": scripted},
                    {"id": "tools", "use": "tools"},
                    {"id": "interaction", "use": "interaction", "config": {"ask_user_question": True}},
                    {"id": "hooks", "use": "hooks", "config": {"project_config": True}},
                    {"id": "bash", "use": "tool_bash"},
                    {"id": "agent", "use": "agent"},
                ],
            }
        )
    )
    return workspace, config


def _bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command, "description": "mark"}}]}


def _start(page: Any, served: Any, prompt: str, workspace: Path) -> None:
    page.goto(served.url)
    page.fill("form.new textarea[name=prompt]", prompt)
    page.fill("form.new input[name=cwd]", str(workspace))
    page.get_by_role("button", name="Start session").click()
    page.wait_for_url("**/s/*")


def test_an_approval_is_answered_on_the_page(browser: Any, store: Path, tmp_path: Path) -> None:
    replies = [_bash("touch rejected"), {"text": "understood"}, _bash("touch allowed"), {"text": "done"}]
    workspace, config = _deployment(tmp_path, replies)
    served = start_web(store, "--config", str(config))
    try:
        page = browser.new_page()
        _start(page, served, "make a marker", workspace)
        page.wait_for_selector("form.approval", timeout=30_000)  # the turn waits on the page
        assert "check with a person" in page.locator("div.waiting").inner_text()
        page.fill("form.approval input[name=message]", "not on a Friday")
        page.get_by_role("button", name="Reject").click()
        page.wait_for_selector("li.end", timeout=30_000)
        assert not (workspace / "rejected").exists()
        assert "not on a Friday" in page.locator("li.result").first.inner_text()
        page.fill("form.prompt textarea[name=text]", "try again")
        page.get_by_role("button", name="Send").click()
        page.wait_for_selector("form.approval", timeout=30_000)
        page.get_by_role("button", name="Allow once").click()
        page.wait_for_selector("li.end >> nth=1", timeout=30_000)
        assert (workspace / "allowed").exists()
        decided = page.locator("li.decided").all_inner_texts()
        assert [text.splitlines()[0] for text in decided] == ["approval rejected", "approval allowed-once"]
    finally:
        stop(served)


def test_a_question_is_answered_on_the_page(browser: Any, store: Path, tmp_path: Path) -> None:
    question = {
        "questions": [
            {
                "id": "color",
                "question": "Which color?",
                "header": "Color",
                "options": [{"label": "red"}, {"label": "blue"}],
            }
        ]
    }
    replies: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "ask_user_question", "arguments": question}]},
        {"text": "noted"},
    ]
    workspace, config = _deployment(tmp_path, replies)
    served = start_web(store, "--config", str(config))
    try:
        page = browser.new_page()
        _start(page, served, "ask me", workspace)
        page.wait_for_selector("form.questions", timeout=30_000)
        page.get_by_label("blue").check()
        page.get_by_role("button", name="Answer").click()
        page.wait_for_selector("li.end", timeout=30_000)
        assert "blue" in page.locator("li.result").first.inner_text()
    finally:
        stop(served)
