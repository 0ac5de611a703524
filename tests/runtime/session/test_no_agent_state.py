"""runtime/session has no notion of an agent: the state an agent derives from its log (header and whether this run
wrote it, request context, snapshot, inbox, settled jobs) is `dsh.runtime.agent`'s `AgentState`, a `LogFold`. The
import contracts keep session from importing the agent package; this keeps the moved names from creeping back as
session's own code (the wire module still declares the agent's event types, as it declares every wire tag)."""

from __future__ import annotations

import tokenize
from pathlib import Path

SESSION = Path(__file__).resolve().parents[3] / "runtime" / "session"
MOVED = {
    "AgentState",
    "InboxItem",
    "SNAPSHOT_FORM",
    "header_seq",
    "header_written",
    "inbox",
    "request_context",
    "seed_end",
    "settled_jobs",
    "snapshot",
    "snapshot_on",
}


def test_no_session_module_names_the_agents_state() -> None:
    found = []
    modules = sorted(SESSION.rglob("*.py"))
    assert modules, f"no modules under {SESSION}"
    for path in modules:
        with path.open("rb") as source:
            for token in tokenize.tokenize(source.readline):
                if token.type == tokenize.NAME and token.string in MOVED:
                    found.append(f"{path.relative_to(SESSION)}:{token.start[0]}: {token.string}")
    assert not found, "the agent's state belongs to dsh.runtime.agent (AgentState):\n" + "\n".join(found)


def test_the_check_sees_a_moved_name(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f(state):\n    return state.settled_jobs  # inbox in a comment is fine\n")
    with sample.open("rb") as source:
        names = [t.string for t in tokenize.tokenize(source.readline) if t.type == tokenize.NAME]
    assert MOVED & set(names) == {"settled_jobs"}
