"""`dsh web`'s speed, each against a baseline measured in the same run:

- a session page of a 100,000-event session: the server's time to answer it (the app called in-process) against
  `dsh sessions show` of the same session (the typer command in-process, output to a buffer); target <= 2x;
- the session list of a store with 10,000 sessions: each page's server time; target <= 100 ms a page;
- live: the time from an event's commit by another process to its text in the browser's DOM, at p95, measured in
  the browser (Debian's chromium through Playwright; skipped without it); target <= 250 ms.

The big session repeats the turns of fixtures/harness/tool-call-turn (each copy renumbered) until it holds 100,000
events."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
from starlette.testclient import TestClient
from typer.testing import CliRunner

from dsh.plugins.web import create_app
from dsh.runtime.cli.app import app as cli
from dsh.runtime.session import SessionStore, StoredEvent, read_jsonl

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "fixtures" / "harness" / "tool-call-turn" / "session.jsonl"
EVENTS = 100_000
SESSIONS = 10_000
PAGE_TARGET_RATIO = 2.0
LIST_TARGET_MS = 100.0
LIVE_TARGET_MS = 250.0
LIVE_CHUNKS = 100


def _recorded_turn() -> list[StoredEvent]:
    with RECORDED.open("rb") as handle:
        _, events = read_jsonl(handle)
        recorded = list(events)
    start = next(i for i, e in enumerate(recorded) if e.type == "turn/start")
    return recorded[start:]


def _big_session(store: SessionStore) -> str:
    turn = _recorded_turn()
    info = store.create(cwd="/workspace")
    seq = 0
    copy = 0
    batch: list[StoredEvent] = []
    while seq < EVENTS:
        copy += 1
        for event in turn:
            data = event.data.replace('"turn":1,', f'"turn":{copy},').replace('"turn":1}', f'"turn":{copy}}}')
            data = data.replace('"id":"', f'"id":"{copy}-')
            batch.append(msgspec.structs.replace(event, seq=seq, data=data, typed=None))
            seq += 1
        if len(batch) > 5_000:
            store.append_events(info.id, batch)
            batch = []
    store.append_events(info.id, batch)
    return info.id


def _timed(run: object, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _page_vs_show(directory: Path) -> bool:
    path = directory / "big.db"
    with SessionStore(path) as store:
        session = _big_session(store)
        length = store.length(session)
        client = TestClient(
            create_app(store, token="t", hosts=["testserver"]), cookies={"dsh_web_token": "t"}
        )
        page = _timed(lambda: client.get(f"/s/{session}").raise_for_status(), repeat=3)
    runner = CliRunner()
    show = _timed(lambda: runner.invoke(cli, ["sessions", "show", session, "--store", str(path)]), repeat=3)
    ratio = page / show
    print(
        f"session page of {length} events: {page * 1000:.0f} ms; sessions show: {show * 1000:.0f} ms; "
        f"ratio {ratio:.2f} (target <= {PAGE_TARGET_RATIO})"
    )
    return ratio <= PAGE_TARGET_RATIO


def _list_pages(directory: Path) -> bool:
    turn = _recorded_turn()
    with SessionStore(directory / "many.db") as store:
        for _ in range(SESSIONS):
            info = store.create(cwd="/workspace")
            store.append_events(
                info.id, [msgspec.structs.replace(e, seq=i, typed=None) for i, e in enumerate(turn[:12])]
            )
        client = TestClient(
            create_app(store, token="t", hosts=["testserver"]), cookies={"dsh_web_token": "t"}
        )
        worst = 0.0
        for number in (1, 2, SESSIONS // 100, SESSIONS // 50):
            spent = _timed(lambda n=number: client.get(f"/?page={n}").raise_for_status(), repeat=3)
            worst = max(worst, spent)
            print(f"list page {number} of {SESSIONS} sessions: {spent * 1000:.1f} ms")
    print(f"slowest list page: {worst * 1000:.1f} ms (target <= {LIST_TARGET_MS:.0f} ms)")
    return worst * 1000 <= LIST_TARGET_MS


def _stream_events(count: int) -> list[StoredEvent]:
    """A turn's opening and one text block's start, then `count` placeholder deltas (their text is set as written)."""
    lines = [
        {"type": "session", "version": 0, "id": "live", "createdAt": 0, "delegationDepth": 0},
        {"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}},
        {"type": "step/start", "seq": 1, "time": 0, "data": {"turn": 1, "step": 1}},
        {
            "type": "assistant/chunk",
            "seq": 2,
            "time": 0,
            "data": {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}},
        },
    ]
    for n in range(count):
        chunk = {"type": "text-delta", "index": 0, "text": "x"}
        lines.append(
            {
                "type": "assistant/chunk",
                "seq": 3 + n,
                "time": 0,
                "data": {"turn": 1, "step": 1, "chunk": chunk},
            }
        )
    _, events = read_jsonl(json.dumps(line).encode() for line in lines)
    return list(events)


def _live(directory: Path) -> bool | None:
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        print("live: skipped (no /usr/bin/chromium)")
        return None
    from playwright.sync_api import sync_playwright

    path = directory / "live.db"
    events = _stream_events(LIVE_CHUNKS)
    with SessionStore(path) as store:
        session = store.create(cwd="/workspace").id
        store.append_events(session, events[:3])
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from dsh.runtime.cli import main; main()",
            "web",
            "--store",
            str(path),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        base = url.partition("/?token=")[0]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(chromium),
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
            )
            page = browser.new_page()
            page.goto(url)
            page.goto(f"{base}/s/{session}")
            page.evaluate(
                r"""() => { window.lags = [];
                new MutationObserver((records) => { for (const r of records) for (const n of r.addedNodes) {
                  const m = /\[(\d+\.\d+)\]/.exec(n.textContent || ""); if (m) window.lags.push(Date.now() - Number(m[1]) * 1000);
                } }).observe(document.getElementById("log"), {childList: true, subtree: true}); }"""
            )
            with SessionStore(path) as store:
                for event in events[3:]:
                    text = json.dumps(
                        {
                            "turn": 1,
                            "step": 1,
                            "chunk": {"type": "text-delta", "index": 0, "text": f"[{time.time():.3f}]"},
                        }
                    )
                    store.append_events(session, [msgspec.structs.replace(event, data=text, typed=None)])
                    time.sleep(0.02)
            page.wait_for_function(f"window.lags.length >= {LIVE_CHUNKS}", timeout=30_000)
            lags = sorted(page.evaluate("window.lags"))
            browser.close()
    finally:
        server.terminate()
        server.communicate(timeout=10)
    p95 = lags[int(len(lags) * 0.95) - 1]
    print(
        f"live: an appended chunk in the DOM after {statistics.median(lags):.0f} ms median, {p95:.0f} ms p95 "
        f"(target p95 <= {LIVE_TARGET_MS:.0f} ms; {len(lags)} chunks)"
    )
    return p95 <= LIVE_TARGET_MS


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dsh-bench-web-") as scratch:
        directory = Path(scratch)
        met = _page_vs_show(directory)
        met &= _list_pages(directory)
        met &= _live(directory) is not False
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
