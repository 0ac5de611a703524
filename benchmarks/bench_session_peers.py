"""The session store against its peers persisting the same conversation: the OpenAI Agents SDK's `SQLiteSession`
(one `add_items` per turn) and LangGraph's `SqliteSaver` under a one-node `StateGraph(MessagesState)` (one `invoke`
per turn). dsh appends the turn's events and flushes once at turn end, as the loop does. Each figure is a ratio of
the peer's cost to dsh's in the same run.

The peers are benchmark extras: `uv run --locked --extra dev --extra bench python -m benchmarks session_peers`;
without them this module says so and is skipped.
"""

from __future__ import annotations

import importlib.util
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from dsh.runtime.llm import AssistantMessage, MessageId, ModelSource, TextBlock, UserMessage
from dsh.runtime.session import (
    AssistantMessageData,
    AssistantMessageEvent,
    SessionStore,
    StepData,
    StepEnd,
    StepStart,
    TurnEnd,
    TurnEndData,
    TurnEndReason,
    TurnStart,
    TurnStartData,
    UserMessageEvent,
    open_log,
)

TURNS = 300
TAIL = 20  # per-turn cost is the median of the last TAIL turns (history is longest there)
USER = "Please look at the failing test in tests/test_parser.py and tell me what is wrong with it. " * 2
ASSISTANT = "The parser drops the trailing newline before matching, so the last token is never emitted. " * 2


def _file_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def _dsh(folder: Path) -> tuple[list[float], int]:
    path = folder / "dsh.db"
    times: list[float] = []

    async def run() -> None:
        with SessionStore(path) as store:
            session = store.create().id
            async with open_log(store, session, repair=False) as log:
                for turn in range(1, TURNS + 1):
                    start = time.perf_counter()
                    for event in (
                        TurnStart(data=TurnStartData(turn=turn)),
                        StepStart(data=StepData(turn=turn, step=1)),
                        UserMessageEvent(
                            data=UserMessage(id=MessageId(f"u{turn}"), content=(TextBlock(USER),)),
                            surface_op="append",
                        ),
                        AssistantMessageEvent(
                            data=AssistantMessageData(
                                turn=turn,
                                step=1,
                                message=AssistantMessage(
                                    id=MessageId(f"a{turn}"),
                                    source=ModelSource(provider="p", model="m"),
                                    content=(TextBlock(ASSISTANT),),
                                ),
                            ),
                            surface_op="append",
                        ),
                        StepEnd(data=StepData(turn=turn, step=1)),
                        TurnEnd(data=TurnEndData(turn=turn, reason=TurnEndReason(kind="completed"))),
                    ):
                        log.append(event)
                    await log.flush()
                    times.append(time.perf_counter() - start)

    anyio.run(run)
    return times, _file_size(path)


def _openai(folder: Path) -> tuple[list[float], int]:
    from agents import SQLiteSession

    path = folder / "openai.db"
    times: list[float] = []

    async def run() -> None:
        session = SQLiteSession("bench", str(path))
        for _ in range(TURNS):
            start = time.perf_counter()
            await session.add_items(
                [{"role": "user", "content": USER}, {"role": "assistant", "content": ASSISTANT}]  # type: ignore[list-item]  # plain message dicts are valid items
            )
            times.append(time.perf_counter() - start)
        session.close()

    anyio.run(run)
    return times, _file_size(path)


def _langgraph(folder: Path) -> tuple[list[float], int]:
    import sqlite3

    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph

    path = folder / "langgraph.db"
    conn = sqlite3.connect(path, check_same_thread=False)
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [AIMessage(ASSISTANT)]})
    builder.add_edge(START, "model")
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    config = {"configurable": {"thread_id": "bench"}}
    times: list[float] = []
    for _ in range(TURNS):
        start = time.perf_counter()
        graph.invoke({"messages": [HumanMessage(USER)]}, config)  # type: ignore[arg-type]  # a RunnableConfig dict
        times.append(time.perf_counter() - start)
    conn.close()
    return times, _file_size(path)


def _row(name: str, times: list[float], size: int, ours: tuple[list[float], int] | None) -> str:
    tail = statistics.median(times[-TAIL:])
    total = sum(times)
    text = f"{name:<26} turn {TURNS}: {tail * 1e3:8.3f} ms, all {TURNS} turns {total:6.2f} s, {size / 1e6:7.2f} MB"
    if ours is not None:
        our_tail, our_total = statistics.median(ours[0][-TAIL:]), sum(ours[0])
        text += f"  -> x{tail / our_tail:.1f} per turn, x{total / our_total:.1f} total, x{size / ours[1]:.1f} disk vs dsh"
    return text


def main() -> int:
    missing = [name for name in ("agents", "langgraph") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"skipped: the peers are not installed ({', '.join(missing)}); run with `--extra bench`")
        return 0
    peers: list[tuple[str, Callable[[Path], tuple[list[float], int]]]] = [
        ("openai-agents SQLiteSession", _openai),
        ("langgraph SqliteSaver", _langgraph),
    ]
    with tempfile.TemporaryDirectory(prefix="dsh-bench-peers-") as folder:
        ours = _dsh(Path(folder))
        print(_row("dsh SessionStore", *ours, None))
        for name, run in peers:
            print(_row(name, *run(Path(folder)), ours))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
