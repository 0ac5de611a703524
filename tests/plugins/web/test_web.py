"""`dsh web` end to end: a real server process, its access token and Host/Origin checks, the headers every response
carries, and the pages in Debian's chromium: the list (search, paging, lineage), a session page of recordings of the
original, hostile content shown as text, and a session another process writes streaming into an open page."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx

from dsh.plugins.web import CSP, PAGE_SIZE

from .conftest import HARNESS, ROOT, Served, dsh, import_log, start_web, stop, writing

SHARED = ROOT.parent / "shared" / "fixtures-harness"


def _get(served: Served, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(served.base + path, timeout=10, **kwargs)


def test_the_first_line_is_the_address_with_its_token(web: Served) -> None:
    assert web.url.startswith("http://127.0.0.1:")
    assert len(web.token) >= 40


def test_without_the_token_every_path_is_401_and_still_carries_the_policy(web: Served) -> None:
    for path in ("/", "/static/live.js", "/s/anything", "/s/x/live"):
        answered = _get(web, path)
        assert answered.status_code == 401, path
        assert answered.headers["content-security-policy"] == CSP
    assert _get(web, "/?token=wrong" + web.token[5:]).status_code == 401


def test_the_token_becomes_an_http_only_strict_cookie_and_leaves_the_address(web: Served) -> None:
    first = _get(web, f"/?token={web.token}&page=1")
    assert first.status_code == 303
    assert first.headers["location"] == "/?page=1"
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    page = _get(web, "/", cookies={"dsh_web_token": web.token})
    assert page.status_code == 200
    assert "Reply with exactly the word" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "'unsafe-inline'" not in page.headers["content-security-policy"]


def test_a_foreign_host_header_is_refused_whatever_the_token(web: Served) -> None:
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host: evil.example.
    answered = _get(web, f"/?token={web.token}", headers={"Host": "evil.example"})
    assert answered.status_code == 421


def test_a_state_changing_request_needs_this_servers_origin(web: Served) -> None:
    cookies = {"dsh_web_token": web.token}
    for origin in (None, "http://evil.example"):
        headers = {} if origin is None else {"Origin": origin}
        refused = httpx.post(web.base + "/", cookies=cookies, headers=headers, timeout=10)
        assert refused.status_code == 403, origin
    allowed = httpx.post(web.base + "/", cookies=cookies, headers={"Origin": web.base}, timeout=10)
    assert allowed.status_code == 405  # past the guard: the list takes no POST


def test_no_path_reaches_the_filesystem(web: Served) -> None:
    cookies = {"dsh_web_token": web.token}
    for path in ("/static/../_app.py", "/static/%2e%2e/_app.py", "/static/..%2f..%2fpyproject.toml"):
        answered = httpx.get(web.base + path, cookies=cookies, timeout=10)
        assert answered.status_code == 404, path
        assert "def create_app" not in answered.text


def test_a_session_that_is_not_there_is_a_404_page(web: Served) -> None:
    answered = _get(web, "/s/no-such-session", cookies={"dsh_web_token": web.token})
    assert answered.status_code == 404
    assert "no session &#39;no-such-session&#39;" in answered.text


def test_a_non_loopback_host_refuses_to_start_without_a_token(store: Path) -> None:
    refused = dsh(
        "web", "--store", str(store), "--host", "0.0.0.0", "--port", "0", env={"PATH": "/usr/bin:/bin"}
    )
    assert refused.returncode == 2
    assert "needs --token" in refused.stderr


# ------------------------------------------------------------------ in the browser


def _open(browser: Any, served: Served) -> Any:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("dialog", lambda dialog: errors.append(f"dialog: {dialog.message}"))
    page.errors = errors
    page.goto(served.url)
    return page


def test_the_list_links_each_session_to_its_page(browser: Any, store: Path, tmp_path: Path) -> None:
    for name in ("tool-call-turn", "multi-turn"):
        import_log(store, HARNESS / name / "session.jsonl")
    served = start_web(store)
    try:
        shots = Path(os.environ.get("DSH_WEB_SCREENSHOTS", tmp_path))  # docs/ takes the README's from here
        page = _open(browser, served)
        page.set_viewport_size({"width": 1100, "height": 420})
        assert page.locator("table.sessions tbody tr").count() == 2
        page.screenshot(path=str(shots / "web-list.png"))
        page.get_by_role("link", name="Use the bash tool to").click()
        page.wait_for_selector("li.result")
        assert page.locator("li.turn h2").first.inner_text() == "Turn 1"
        assert "→ bash" in page.locator("li.assistant .call").first.inner_text()
        assert "SNAPSHOT_OK" in page.locator("li.result pre").first.inner_text()
        assert "turn 1 completed" in page.locator("li.end").inner_text()
        figures = page.locator("section.figures").inner_text()
        assert "2 model calls" in figures
        assert "1 tool call" in figures
        assert "cost 0.00" in figures  # priced at DeepSeek's published prices
        page.set_viewport_size({"width": 1100, "height": 900})
        page.screenshot(path=str(shots / "web-session.png"))
        assert page.errors == []
    finally:
        stop(served)


def test_every_shared_recording_of_the_original_has_a_page(browser: Any, store: Path) -> None:
    logs = sorted(SHARED.glob("*/session.jsonl"))
    ids = {import_log(store, log): log.parent.name for log in logs}
    served = start_web(store)
    try:
        page = _open(browser, served)
        for session, name in ids.items():
            page.goto(f"{served.base}/s/{session}")
            assert page.locator("ol#log > li").count() > 0, name
            assert page.locator("li.turn").count() >= 1, name
        assert page.errors == []
    finally:
        stop(served)


HOSTILE = '<img src=x onerror="document.title=\'PWNED\'"><script>document.title="PWNED"</script>'


def _hostile_log(tmp_path: Path) -> Path:
    text = (HARNESS / "text-turn" / "session.jsonl").read_text()
    swapped = text.replace(
        "Reply with exactly the word: PONG. Do not use any tools.", HOSTILE.replace('"', '\\"')
    )
    swapped = swapped.replace('"PONG"', json.dumps(HOSTILE + " [x](javascript:alert(1))"))
    swapped = swapped.replace('"title":"Reply with exactly the word:"', '"title":' + json.dumps(HOSTILE))
    log = tmp_path / "hostile.jsonl"
    log.write_text(swapped)
    return log


def test_hostile_content_is_shown_as_text(browser: Any, store: Path, tmp_path: Path) -> None:
    session = import_log(store, _hostile_log(tmp_path))
    served = start_web(store)
    try:
        page = _open(browser, served)
        assert "<img src=x" in page.locator("table.sessions tbody tr td a").first.inner_text()
        page.goto(f"{served.base}/s/{session}")
        page.wait_for_selector("li.user")
        assert "<script>" in page.locator("li.user .md").first.inner_text()
        assert page.locator("li.item img, li.item script").count() == 0
        assert page.locator('a[href^="javascript"]').count() == 0
        assert page.title() != "PWNED"
        assert page.errors == []
    finally:
        stop(served)


def test_search_and_paging_over_many_sessions(browser: Any, store: Path) -> None:
    log = HARNESS / "text-turn" / "session.jsonl"
    ids = [import_log(store, log) for _ in range(PAGE_SIZE + 3)]
    served = start_web(store)
    try:
        page = _open(browser, served)
        assert page.locator("table.sessions tbody tr").count() == PAGE_SIZE
        page.get_by_role("link", name="older →").click()
        assert page.locator("table.sessions tbody tr").count() == 3
        page.goto(served.base + "/")
        page.fill("input[name=q]", ids[7][:13])
        page.get_by_role("button", name="Search").click()
        rows = page.locator("table.sessions tbody tr")
        assert rows.count() == 1
        assert rows.first.get_attribute("data-session") == ids[7]
    finally:
        stop(served)


def test_a_session_another_process_writes_streams_into_the_open_page(
    browser: Any, store: Path, tmp_path: Path
) -> None:
    import_log(store, HARNESS / "text-turn" / "session.jsonl")
    go = tmp_path / "go"
    log = HARNESS / "multi-turn" / "session.jsonl"
    with writing(store, log, go, 3, 0.03) as (writer, session):
        served = start_web(store)
        try:
            page = _open(browser, served)
            page.goto(f"{served.base}/s/{session}")
            assert page.locator("li.turn").count() == 1
            assert page.locator("li.assistant").count() == 0
            go.touch()
            page.wait_for_selector("li.end >> nth=1", timeout=30_000)  # both turns ended, no reload
            assert page.locator("li.assistant").count() >= 2
            assert page.locator("li.streaming").count() == 0  # each streamed text gave way to its message
            writer.communicate(timeout=30)
            assert writer.returncode == 0
            last = json.loads(log.read_text().splitlines()[-1])
            page.wait_for_function(f"document.getElementById('length').textContent === '{last['seq'] + 1}'")
            assert page.errors == []
        finally:
            stop(served)


def test_a_page_opened_mid_step_shows_what_already_streamed(
    browser: Any, store: Path, tmp_path: Path
) -> None:
    # The step's text is in the log only as deltas until its message lands: the page must not lose them.
    go = tmp_path / "go"
    # the writer stops at the text delta "ONE" of turn 1, before its message
    with writing(store, HARNESS / "multi-turn" / "session.jsonl", go, 30, 0.03) as (writer, session):
        served = start_web(store)
        try:
            page = _open(browser, served)
            page.goto(f"{served.base}/s/{session}")
            page.wait_for_selector("li.streaming:not(.reasoning)", timeout=30_000)
            assert page.locator("li.streaming:not(.reasoning)").inner_text() == "ONE"
            assert (
                page.locator("li.streaming.reasoning").inner_text().startswith("The user wants me to reply")
            )
            assert page.locator("li.assistant").count() == 0
            go.touch()
            page.wait_for_selector("li.end >> nth=1", timeout=30_000)
            assert page.locator("li.streaming").count() == 0  # the message replaced the streamed text
            assert page.locator("li.assistant").count() >= 2
            writer.communicate(timeout=30)
            assert page.errors == []
        finally:
            stop(served)
