"""`dsh web` over a PostgreSQL store: the session list and page read it, and a session another process writes
into it streams to an open live view, as it does over SQLite (the view polls the store, whatever its backend)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from .conftest import HARNESS, start_web, stop, writing

LOG = HARNESS / "multi-turn" / "session.jsonl"


def _events(stream: httpx.Response, until_seq: int) -> list[tuple[str, str]]:
    """The (event, data) pairs of an SSE stream until an item or delta at `until_seq` or later arrives."""
    seen: list[tuple[str, str]] = []
    kind, data = "", []
    for line in stream.iter_lines():
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])
        elif not line and data:
            text, shown = "\n".join(data), kind
            kind, data = "", []
            if shown not in ("item", "delta"):
                continue
            seen.append((shown, text))
            seq = (
                json.loads(text)["seq"]
                if shown == "delta"
                else int(text.split('data-seq="')[1].split('"')[0])
            )
            if seq >= until_seq:
                return seen
    return seen


def test_a_session_written_into_postgresql_streams_into_the_live_view(pg_url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    with writing(pg_url, LOG, go, 3, 0.01) as (writer, session):
        served = start_web(pg_url)
        try:
            cookies = {"dsh_web_token": served.token}
            listed = httpx.get(served.base + "/", cookies=cookies, timeout=30)
            assert listed.status_code == 200
            assert session in listed.text
            last = json.loads(LOG.read_text().splitlines()[-1])["seq"]
            with httpx.stream(
                "GET", f"{served.base}/s/{session}/live?from=3", cookies=cookies, timeout=httpx.Timeout(60)
            ) as stream:
                assert stream.status_code == 200
                go.touch()
                seen = _events(stream, last)
            items = [data for kind, data in seen if kind == "item"]
            ends = [data for data in items if data.startswith('<li class="item end"')]
            assert len(ends) == 2, items[-3:]  # both turns, each once
            assert 'data-turn="2"' in ends[1]
            assert any(
                kind == "delta" for kind, _ in seen
            )  # the streamed text came through as it was written
            writer.communicate(timeout=30)
            assert writer.returncode == 0
        finally:
            stop(served)
