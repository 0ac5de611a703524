"""Chat in the browser through a replayed model (`dsh web --replay LOG`): start a session, prompt it again, fork it
at a turn, export it, cancel a running turn; forms without this page's CSRF field are refused, and a read-only server
takes no form at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from dsh.plugins.web import csrf_token

from .conftest import HARNESS, Served, start_web, stop


def _start(page: Any, prompt: str, cwd: Path) -> None:
    page.fill("form.new textarea[name=prompt]", prompt)
    page.fill("form.new input[name=cwd]", str(cwd))
    page.get_by_role("button", name="Start session").click()
    page.wait_for_url("**/s/*")


def test_start_prompt_fork_and_export_a_session(browser: Any, store: Path, tmp_path: Path) -> None:
    served = start_web(store, "--replay", str(HARNESS / "multi-turn"))
    try:
        page = browser.new_page()
        page.goto(served.url)
        _start(page, "Remember this fact for later: the codeword is MARMALADE.", tmp_path)
        page.wait_for_selector("li.end", timeout=30_000)
        assert "turn 1 completed" in page.locator("li.end").first.inner_text()
        session = page.url.rsplit("/", 1)[1]
        page.reload()  # the page as a returning user sees it: the prompt form and the fork form
        page.fill("form.prompt textarea[name=text]", "What is the codeword?")
        page.get_by_role("button", name="Send").click()
        page.wait_for_selector("li.end >> nth=1", timeout=30_000)
        assert "turn 2 completed" in page.locator("li.end").nth(1).inner_text()
        page.reload()
        page.select_option("form.fork select[name=turn]", "1")
        page.get_by_role("button", name="Fork").click()
        page.wait_for_url(lambda url: session not in url and "/s/" in url)
        assert "forked from" in page.locator("section.lineage").inner_text()
        assert page.locator("li.end").count() == 1  # the fork holds turn 1 only
        exported = httpx.get(
            f"{served.base}/s/{session}/export", cookies={"dsh_web_token": served.token}, timeout=10
        )
        assert exported.status_code == 200
        assert exported.text.startswith('{"type":"session"')
        assert exported.text.count('"type":"turn/end"') == 2
    finally:
        stop(served)


def test_cancel_ends_a_running_turn_aborted(browser: Any, store: Path, tmp_path: Path) -> None:
    served = start_web(
        store, "--replay", str(HARNESS / "cancel")
    )  # its override hangs the stream until cancelled
    try:
        page = browser.new_page()
        page.goto(served.url)
        _start(page, "Start a long task; this turn will be cancelled mid-stream.", tmp_path)
        page.wait_for_selector("li.streaming", timeout=30_000)  # the recorded "partial" streamed in
        page.get_by_role("button", name="Cancel the running turn").click()
        page.wait_for_selector("li.end", timeout=30_000)
        assert "turn 1 aborted" in page.locator("li.end").inner_text()
    finally:
        stop(served)


def _post(served: Served, path: str, form: dict[str, str]) -> httpx.Response:
    return httpx.post(
        served.base + path,
        data=form,
        cookies={"dsh_web_token": served.token},
        headers={"Origin": served.base},
        timeout=10,
    )


def test_a_form_without_the_csrf_field_is_refused(store: Path, tmp_path: Path) -> None:
    served = start_web(store, "--replay", str(HARNESS / "text-turn"))
    try:
        refused = _post(served, "/new", {"prompt": "hi", "cwd": str(tmp_path)})
        assert refused.status_code == 403
        assert "CSRF" in refused.text
        forged = _post(
            served, "/new", {"prompt": "hi", "cwd": str(tmp_path), "csrf": csrf_token("not-the-token")}
        )
        assert forged.status_code == 403
        accepted = _post(
            served, "/new", {"prompt": "hi", "cwd": str(tmp_path), "csrf": csrf_token(served.token)}
        )
        assert accepted.status_code == 303
        assert accepted.headers["location"].startswith("/s/")
    finally:
        stop(served)


def test_a_read_only_server_takes_no_form(store: Path, tmp_path: Path) -> None:
    served = start_web(store, "--replay", str(HARNESS / "text-turn"), "--read-only")
    try:
        refused = _post(
            served, "/new", {"prompt": "hi", "cwd": str(tmp_path), "csrf": csrf_token(served.token)}
        )
        assert refused.status_code == 405
        assert "read-only" in refused.text
    finally:
        stop(served)
