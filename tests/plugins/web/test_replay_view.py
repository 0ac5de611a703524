"""The replay view: a stored session re-run from its page, the verdict, the first divergence with the recording and
the re-run side by side at that line, and links to both sessions (the replayed one stored beside the recording)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from dsh.plugins.web import csrf_token

from .conftest import HARNESS, import_log, start_web, stop


def _rerun(page: Any, base: str, session: str) -> None:
    page.goto(f"{base}/s/{session}")
    page.get_by_role("button", name="Re-run this session and compare").click()
    page.wait_for_selector("p.verdict", timeout=60_000)


def test_a_diverged_session_shows_its_first_difference_side_by_side(
    browser: Any, store: Path, tmp_path: Path
) -> None:
    # The recording says its turn was interrupted; the re-run completes it.
    log = tmp_path / "tampered.jsonl"
    text = (HARNESS / "tool-call-turn" / "session.jsonl").read_text()
    assert text.count('"reason":{"kind":"completed"}') == 1
    log.write_text(text.replace('"reason":{"kind":"completed"}', '"reason":{"kind":"interrupted"}'))
    session = import_log(store, log)
    served = start_web(store)
    try:
        page = browser.new_page()
        page.goto(served.url)
        _rerun(page, served.base, session)
        assert page.locator("p.verdict").inner_text() == "The re-run diverged from the recording."
        assert "first divergence at skeleton line" in page.locator("pre.divergence").inner_text()
        first = page.locator("tr.first-difference")
        assert first.count() == 1
        recorded, replayed = first.locator("td").nth(1).inner_text(), first.locator("td").nth(2).inner_text()
        assert recorded == "turn 1 ended interrupted"
        assert replayed == "turn 1 ended completed"
        page.locator("a.replayed").click()
        page.wait_for_selector("li.result")
        assert "SNAPSHOT_OK" in page.locator("li.result pre").first.inner_text()
    finally:
        stop(served)


def test_a_faithful_session_matches(browser: Any, store: Path) -> None:
    session = import_log(store, HARNESS / "text-turn" / "session.jsonl")
    served = start_web(store)
    try:
        page = browser.new_page()
        page.goto(served.url)
        _rerun(page, served.base, session)
        assert page.locator("p.verdict").inner_text() == "The re-run matches the recording."
        assert page.locator("tr.first-difference").count() == 0
    finally:
        stop(served)


def test_a_read_only_server_re_runs_nothing(store: Path) -> None:
    session = import_log(store, HARNESS / "text-turn" / "session.jsonl")
    served = start_web(store, "--read-only")
    try:
        refused = httpx.post(
            f"{served.base}/s/{session}/replay",
            data={"csrf": csrf_token(served.token)},
            cookies={"dsh_web_token": served.token},
            headers={"Origin": served.base},
            timeout=30,
        )
        assert refused.status_code == 405
    finally:
        stop(served)
