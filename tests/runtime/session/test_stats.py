"""`session_stats`: the figures of every recorded session against sums computed here, independently, from the JSONL
files with plain `json` (packed rows, retries, compaction calls and child logs included); times and costs against
a hand-made log whose every time is known."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dsh.runtime.session import (
    Price,
    PriceTable,
    SessionStore,
    import_jsonl,
    session_stats,
)

ROOT = Path(__file__).resolve().parents[3]
RECORDINGS = sorted(
    {path.parent for path in (ROOT / "fixtures").glob("*/*/session.jsonl")}
    | {path.parent for path in Path("/work/shared/fixtures-harness").glob("*/session.jsonl")},
    key=lambda p: (p.parent.name, p.name, str(p)),
)
FLAT = PriceTable(prices=(Price(provider="*", model="*", input=2.0, output=8.0, cache_read=0.5),))


@dataclass
class Sums:
    """What a log holds, counted from its lines."""

    turns: int = 0
    steps: int = 0
    model_calls: int = 0
    retries: int = 0
    tools: Counter[str] = field(default_factory=Counter)
    tool_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cost: float = 0.0

    def add_usage(self, usage: dict[str, int]) -> None:
        self.input_tokens += usage["inputTokens"]
        self.output_tokens += usage["outputTokens"]
        self.reasoning_tokens += usage.get("reasoningTokens", 0)
        self.cache_read_tokens += usage.get("cacheReadTokens", 0)
        self.cost += (
            usage["inputTokens"] * 2.0 + usage["outputTokens"] * 8.0 + usage.get("cacheReadTokens", 0) * 0.5
        ) / 1e6


def count(path: Path) -> Sums:
    """The sums of one JSONL log's own events (a fork child's first `seedLength` events are its parent's)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    header, rows = lines[0], lines[1:]
    own_from = header.get("seedLength") or 0
    sums = Sums()
    started: Counter[tuple[int, int]] = Counter()
    summarised: set[str] = set()
    title_asked = False  # a title request waiting for its title: one model call, its usage on the title
    streaming = False  # a call has streamed chunks and not finished (a cancelled call never does)
    for row in rows:
        seq = row.get("seq", row.get("seq0"))
        if seq < own_from:
            continue
        kind, data = row["type"], row["data"]
        if (
            kind in ("assistant/chunk", "text-chunks", "reasoning-chunks", "tool-call-chunks")
            and not streaming
        ):
            streaming = True
            sums.model_calls += 1
            key = (data["turn"], data["step"])
            started[key] += 1
            sums.retries += started[key] > 1
        if kind in ("step/start", "step/end", "turn/start", "turn/end", "llm/retry", "compaction/start"):
            streaming = False
        if kind == "turn/start":
            sums.turns += 1
        elif kind == "step/start":
            sums.steps += 1
        elif kind == "assistant/chunk":
            chunk = data["chunk"]
            if chunk["type"] == "usage":
                sums.add_usage(chunk["usage"])
            elif chunk["type"] == "finish":
                streaming = False
        elif kind == "tool/call":
            sums.tools[data["name"]] += 1
        elif kind == "tool/result":
            blocks = data.get("message", {}).get("content", [])
            if data.get("error") or data.get("isError") or any(b.get("isError") for b in blocks):
                sums.tool_errors += 1
        elif kind == "session/title-llm-request":
            title_asked = True
        elif kind == "session/title" and title_asked:
            title_asked = False
            sums.model_calls += 1
            if "usage" in data:
                sums.add_usage(data["usage"])
        elif kind in ("compaction/summary", "compaction/end") and data.get("llmStreamCall"):
            if data.get("compactionId") in summarised:
                continue
            summarised.add(data.get("compactionId"))
            sums.model_calls += 1
            if "usage" in data:
                sums.add_usage(data["usage"])
    return sums


def _import(store: SessionStore, directory: Path) -> tuple[str, list[Path]]:
    main = import_jsonl(store, directory / "session.jsonl")
    children = sorted(directory.glob("session.*.jsonl"))
    for child in children:
        import_jsonl(store, child)
    return main.id, children


def _check(figures: Any, sums: Sums) -> None:
    assert figures.turns == sums.turns
    assert figures.steps == sums.steps
    assert figures.model_calls == sums.model_calls
    assert figures.retries == sums.retries
    assert figures.tool_calls == sum(sums.tools.values())
    assert figures.tool_errors == sums.tool_errors
    assert figures.input_tokens == sums.input_tokens
    assert figures.output_tokens == sums.output_tokens
    assert figures.reasoning_tokens == sums.reasoning_tokens
    assert figures.cache_read_tokens == sums.cache_read_tokens
    assert figures.cost == pytest.approx(sums.cost)


@pytest.mark.parametrize("directory", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stats_are_the_sums_of_the_log(tmp_path: Path, directory: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        session, children = _import(store, directory)
        stats = session_stats(store, session, prices=FLAT)
    own = count(directory / "session.jsonl")
    _check(stats, own)
    assert {name: tool.calls for name, tool in stats.tools.items()} == dict(own.tools)
    assert len(stats.calls) == own.model_calls
    titles = sum(
        call.input_tokens for call in stats.calls if call.kind == "title"
    )  # the session's, after a turn
    assert (
        sum(turn.input_tokens for turn in stats.per_turn) + titles == own.input_tokens
    )  # every other call in its turn
    child_sums = [count(path) for path in children]
    assert len(stats.children) == len(children)
    assert sorted(c.input_tokens for c in stats.children) == sorted(s.input_tokens for s in child_sums)
    assert stats.children_total.model_calls == sum(s.model_calls for s in child_sums)
    assert stats.children_total.output_tokens == sum(s.output_tokens for s in child_sums)
    assert stats.total.input_tokens == own.input_tokens + sum(s.input_tokens for s in child_sums)
    assert stats.total.cost == pytest.approx(own.cost + sum(s.cost for s in child_sums))


def test_the_corpus_holds_what_these_tests_are_about() -> None:
    """The recordings above include packed chunks, a retry, a compaction call and a subagent child: the sums are
    not checked on trivial logs only."""
    names = {p.name for p in RECORDINGS}
    assert {
        "packed-chunks",
        "empty-response-retry",
        "compaction-recovery",
        "subagent-fork-in-process",
    } <= names
    retried = count(next(p for p in RECORDINGS if p.name == "empty-response-retry") / "session.jsonl")
    assert retried.retries == 1
    assert retried.model_calls == 2


def _line(kind: str, seq: int, time: int, data: dict[str, Any], **envelope: Any) -> str:
    return json.dumps({"type": kind, "seq": seq, "time": time, "data": data, **envelope})


def _timed_log(path: Path) -> Path:
    """One turn, two steps: a call with a tool call whose result is an error, then a failed attempt, a retry and a
    compaction summariser call; every time known."""
    user = {
        "role": "user",
        "id": "u1",
        "content": [{"type": "text", "text": "hi"}],
        "source": {"kind": "user"},
    }

    def chunk(turn: int, step: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"turn": turn, "step": step, "chunk": body}

    def reply(step: int, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        source = {"kind": "model", "provider": "p", "model": "m"}
        return {
            "turn": 1,
            "step": step,
            "message": {"role": "assistant", "id": f"a{step}", "content": blocks, "source": source},
        }

    call = {"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"}
    result = {
        "turn": 1,
        "step": 1,
        "message": {
            "role": "user",
            "id": "r1",
            "content": [{"type": "tool-result", "toolCallId": "c1", "content": [], "isError": True}],
            "source": {"kind": "tool", "callId": "c1"},
        },
    }
    failure = {"message": "server", "code": "SERVER"}
    rows: list[tuple[str, int, dict[str, Any], dict[str, Any]]] = [
        ("turn/start", 1000, {"turn": 1}, {}),
        ("step/start", 1010, {"turn": 1, "step": 1}, {}),
        ("user/message", 1010, user, {"surfaceOp": "append"}),
        ("request/context", 1020, {"provider": "p", "model": "m"}, {}),
        (
            "assistant/chunk",
            1100,
            chunk(1, 1, {"type": "block-start", "index": 0, "blockType": "tool-call"}),
            {},
        ),
        (
            "assistant/chunk",
            1150,
            chunk(
                1,
                1,
                {
                    "type": "usage",
                    "usage": {
                        "inputTokens": 1000,
                        "outputTokens": 100,
                        "cacheReadTokens": 4000,
                        "reasoningTokens": 10,
                    },
                },
            ),
            {},
        ),
        ("assistant/chunk", 1200, chunk(1, 1, {"type": "finish", "reason": {"kind": "tool-calls"}}), {}),
        ("assistant/message", 1200, reply(1, [call]), {"surfaceOp": "append", "sourceEventSeqs": []}),
        ("tool/call", 1210, {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}, {}),
        ("tool/result", 1310, result, {"surfaceOp": "append", "sourceEventSeqs": [8]}),
        ("step/end", 1310, {"turn": 1, "step": 1}, {}),
        ("step/start", 1320, {"turn": 1, "step": 2}, {}),
        ("request/context", 1330, {"provider": "p", "model": "other"}, {}),
        (
            "assistant/chunk",
            1340,
            chunk(1, 2, {"type": "finish", "reason": {"kind": "error", "failure": failure}}),
            {},
        ),
        (
            "llm/retry",
            1340,
            {
                "retryId": "r",
                "turn": 1,
                "step": 2,
                "provider": "p",
                "mode": "normal",
                "policyKey": "k",
                "retry": 1,
                "delayMs": 10,
                "failure": failure,
            },
            {},
        ),
        ("llm/retry-started", 1350, {"retryId": "r", "turn": 1, "step": 2, "retry": 1}, {}),
        ("assistant/chunk", 1400, chunk(1, 2, {"type": "text-delta", "index": 0, "text": "usage"}), {}),
        (
            "assistant/chunk",
            1450,
            chunk(1, 2, {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 20}}),
            {},
        ),
        ("assistant/chunk", 1500, chunk(1, 2, {"type": "finish", "reason": {"kind": "stop"}}), {}),
        (
            "assistant/message",
            1500,
            reply(2, [{"type": "text", "text": "usage"}]),
            {"surfaceOp": "append", "sourceEventSeqs": []},
        ),
        ("compaction/start", 1510, {"compactionId": "k1", "turn": 1}, {}),
        (
            "compaction/summary",
            1560,
            {
                "compactionId": "k1",
                "llmStreamCall": True,
                "provider": "p",
                "model": "m",
                "usage": {"inputTokens": 300, "outputTokens": 30},
            },
            {},
        ),
        ("compaction/end", 1570, {"compactionId": "k1", "turn": 1}, {}),
        ("step/end", 1580, {"turn": 1, "step": 2}, {}),
        ("turn/end", 1600, {"turn": 1, "reason": {"kind": "completed"}}, {}),
    ]
    header = {"type": "session", "version": 0, "id": "timed", "createdAt": 1000, "delegationDepth": 0}
    text = [json.dumps(header)] + [_line(k, n, t, d, **e) for n, (k, t, d, e) in enumerate(rows)]
    path.write_text("\n".join(text) + "\n")
    return path


def test_times_tokens_and_costs_of_a_log_whose_times_are_known(tmp_path: Path) -> None:
    prices = PriceTable(
        currency="EUR",
        prices=(
            Price(provider="p", model="m", input=1.0, output=2.0, cache_read=0.1),
            Price(provider="*", model="*", input=100.0, output=100.0),
        ),
    )
    with SessionStore(tmp_path / "s.db") as store:
        session = import_jsonl(store, _timed_log(tmp_path / "timed.jsonl")).id
        stats = session_stats(store, session, prices=prices)
    assert (stats.turns, stats.steps, stats.model_calls, stats.retries) == (1, 2, 4, 1)
    first, failed, retried, summary = stats.calls
    assert (first.kind, first.model, first.finish, first.ttft_ms, first.duration_ms) == (
        "step",
        "m",
        "tool-calls",
        80,
        180,
    )
    assert (failed.model, failed.finish, failed.attempt, failed.ttft_ms) == ("other", "SERVER", 1, 10)
    assert (retried.attempt, retried.retries, retried.finish, retried.ttft_ms, retried.duration_ms) == (
        2,
        1,
        "stop",
        50,
        150,
    )
    assert (summary.kind, summary.duration_ms, summary.input_tokens) == ("compaction", 50, 300)
    assert stats.tools["bash"].calls == 1
    assert stats.tools["bash"].errors == 1
    assert stats.tools["bash"].time_ms == 100
    [run] = stats.tool_runs
    assert (run.call_id, run.name, run.turn, run.step, run.start, run.end, run.error) == (
        "c1",
        "bash",
        1,
        1,
        1210,
        1310,
        True,
    )
    assert (stats.per_turn[0].start, stats.per_turn[0].end, stats.started, stats.ended) == (
        1000,
        1600,
        1000,
        1600,
    )
    assert (stats.tool_ms, stats.wall_ms, stats.model_ms) == (100, 600, 180 + 10 + 150 + 50)
    assert (stats.input_tokens, stats.output_tokens, stats.cache_read_tokens, stats.reasoning_tokens) == (
        1310,
        150,
        4000,
        10,
    )
    # p/m at its own price; p/other only matches the catch-all
    expected = (
        (1000 * 1.0 + 100 * 2.0 + 4000 * 0.1) / 1e6 + (10 + 20) * 100.0 / 1e6 + (300 * 1.0 + 30 * 2.0) / 1e6
    )
    assert stats.cost == pytest.approx(expected)
    assert stats.currency == "EUR"
    assert stats.per_turn[0].cost == pytest.approx(expected)
    assert stats.ttft_ms_median == 50
    assert stats.ttft_ms_max == 80
    no_catch_all = PriceTable(prices=prices.prices[:1])
    with SessionStore(tmp_path / "s.db") as store:
        partial = session_stats(store, session, prices=no_catch_all)
        unpriced = session_stats(store, session)
    assert partial.unpriced == ("p/other",)
    assert partial.cost == pytest.approx(expected - 30 * 100.0 / 1e6)
    assert unpriced.cost is None


def test_the_most_specific_price_wins() -> None:
    table = PriceTable(
        prices=(
            Price(provider="*", model="*", input=1, output=1),
            Price(provider="*", model="m", input=2, output=2),
            Price(provider="p", model="*", input=3, output=3),
            Price(provider="p", model="m", input=4, output=4),
        )
    )
    found = [table.price(p, m) for p, m in (("p", "m"), ("p", "x"), ("q", "m"), ("q", "x"))]
    assert [None if price is None else price.input for price in found] == [4, 3, 2, 1]
    assert PriceTable().price("p", "m") is None


def test_adding_figures_adds_every_field() -> None:
    """`Figures.add` spells its fields out: a field added to `Figures` and not to `add` fails here."""
    from dsh.runtime.session import Figures

    one = Figures(**{name: 1 for name in Figures.__struct_fields__ if name != "cost"}, cost=0.5)
    total = Figures()
    total.add(one)
    total.add(one)
    assert all(getattr(total, name) == 2 for name in Figures.__struct_fields__ if name != "cost")
    assert total.cost == 1.0
