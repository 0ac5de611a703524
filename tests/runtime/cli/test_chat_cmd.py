"""`dsh chat` end to end in a pseudo-terminal (pexpect) against a loopback OpenAI-compatible server: a tool-using
turn, Ctrl-C cancelling a turn mid-stream, /fork, the other slash commands, and resuming the fork with --session."""

from __future__ import annotations

import json
import re
import stat
import subprocess
from pathlib import Path

import anyio
import pexpect
import pytest

from dsh.runtime.llm import TextBlock, UserSource
from dsh.runtime.session import SessionStore
from tests.plugins.llm_openai.loopback import loopback
from tests.runtime.cli.helpers import DSH, answer, bash_call, deployment, partial_then_hang, plain_env

pytestmark = pytest.mark.anyio

PROMPT = "\u203a "  # the prompt chat prints


class Terminal:
    """A `dsh chat` in a pty; every wait runs in a worker thread so the loopback server keeps serving."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.child = pexpect.spawn(
            DSH[0],
            [*DSH[1:], "chat", *args],
            cwd=str(cwd),
            env=plain_env(**(env or {})),
            encoding="utf-8",
            timeout=30,
            dimensions=(50, 200),
        )

    async def expect(self, pattern: str) -> re.Match[str]:
        await anyio.to_thread.run_sync(self.child.expect, pattern)
        match = self.child.match
        assert isinstance(match, re.Match)
        return match

    async def expect_exact(self, text: str) -> str:
        await anyio.to_thread.run_sync(self.child.expect_exact, text)
        return str(self.child.before)

    def send(self, line: str) -> None:
        self.child.sendline(line)

    async def wait_exit(self) -> int:
        await anyio.to_thread.run_sync(self.child.expect, pexpect.EOF)
        self.child.close()
        status = self.child.exitstatus
        assert status is not None, f"dsh chat was killed by signal {self.child.signalstatus}"
        return status


async def test_a_chat_runs_turns_cancels_forks_and_resumes(tmp_path: Path) -> None:
    replies = [
        bash_call("echo from-bash"),
        answer("all done", reasoning="thinking it over"),
        partial_then_hang("partial"),
        answer("forked answer"),
        answer("resumed answer"),
    ]
    async with loopback(*replies) as server:
        config = tmp_path / "deployment.yml"
        instructions: dict[str, object] = {
            "id": "instructions",
            "use": "instructions",
            "config": {"user_global": False},
        }
        config.write_text(deployment(server.base_url, extra=(instructions,)))
        (tmp_path / ".git").mkdir()
        (tmp_path / "AGENTS.md").write_text("House rule one.\n")
        store = tmp_path / "sessions.db"
        options = ("--config", str(config), "--store", str(store))
        term = Terminal(*options, cwd=tmp_path)
        parent = (await term.expect(r"session (\S+) · new"))[1]
        await term.expect_exact(PROMPT)

        term.send("echo something")
        await term.expect_exact("→ bash")
        await term.expect_exact("from-bash")
        await term.expect_exact("thinking it over")
        await term.expect_exact("all done")
        await term.expect_exact(PROMPT)

        term.send("start something long")
        await term.expect_exact("partial")
        term.child.sendintr()
        await term.expect_exact("cancelling the turn")
        await term.expect_exact("turn 2 aborted")
        await term.expect_exact(PROMPT)
        with anyio.fail_after(10):
            await server.client_closed.wait()

        term.send("/help")
        await term.expect_exact("/sessions")
        await term.expect_exact(PROMPT)
        (tmp_path / "AGENTS.md").write_text("House rule two.\n")  # sent with the first turn; edited since
        term.send("/prompt")
        await term.expect_exact("You are a test agent on m.")
        await term.expect_exact("user message (agent-instructions):")
        await term.expect_exact("Updated instructions from: AGENTS.md")
        await term.expect_exact("House rule two.")
        await term.expect_exact("tools: bash")
        await term.expect_exact(PROMPT)
        term.send("/compact")
        await term.expect_exact("nothing compacts in this deployment: add the compaction plugin")
        await term.expect_exact(PROMPT)
        term.send("/nonsense")
        await term.expect_exact("unknown command /nonsense")
        await term.expect_exact(PROMPT)

        term.send("/fork")
        fork = await term.expect(r"session (\S+) · forked from (\S+) at seq (\d+)")
        child, forked_from = fork[1], fork[2]
        assert forked_from == parent
        await term.expect_exact(PROMPT)
        term.send("/sessions")
        await term.expect_exact(f"* {child}")
        await term.expect_exact(PROMPT)
        term.send("and now in the fork")
        await term.expect_exact("forked answer")
        await term.expect_exact(PROMPT)
        term.send("/exit")
        await term.expect_exact(f"dsh chat --session {child}")
        assert await term.wait_exit() == 0

        resumed = Terminal(*options, "--session", child, cwd=tmp_path)
        await resumed.expect(rf"session {child} · resumed: 3 turns so far")
        await resumed.expect_exact(PROMPT)
        resumed.send("once more")
        await resumed.expect_exact("resumed answer")
        await resumed.expect_exact(PROMPT)
        resumed.child.sendintr()  # Ctrl-C at the prompt leaves
        assert await resumed.wait_exit() == 0

    last = server.requests[-1].json()["messages"]
    said = [m.get("content") for m in last if m["role"] in ("user", "assistant")]
    told = [text for text in said if isinstance(text, str) and text.startswith("<system-reminder>")]
    assert len(told) == 2  # the workspace instructions: the baseline, then the edit as a change
    assert "Instructions from: AGENTS.md\n\nHouse rule one." in told[0]
    assert "Updated instructions from: AGENTS.md" in told[1]
    assert "House rule two." in told[1]
    said = [text for text in said if text not in told]
    assert said == [
        "echo something",
        "",  # the assistant message that only called bash
        "all done",
        "start something long",
        "partial",  # the interrupted answer is kept
        "and now in the fork",
        "forked answer",
        "once more",
    ]
    with SessionStore(store) as opened:
        ends = [e.decode_data().reason.kind for e in opened.events(parent, types=("turn/end",))]
        assert ends == ["completed", "aborted"]
        info = opened.info(child)
        assert info.parent_id == parent
        assert [e.decode_data().reason.kind for e in opened.events(child, types=("turn/end",))] == [
            "completed",
            "aborted",
            "completed",
            "completed",
        ]


async def test_a_chat_reads_piped_lines_and_ends_at_end_of_input(tmp_path: Path) -> None:
    async with loopback(answer("first"), answer("second")) as server:
        config = tmp_path / "deployment.yml"
        config.write_text(deployment(server.base_url))
        result = await anyio.run_process(
            [*DSH, "chat", "--config", str(config), "--store", str(tmp_path / "s.db")],
            input=b"one\n\n/nonsense\ntwo\n",
            env=plain_env(),
            check=False,
        )
    out = result.stdout.decode()
    assert result.returncode == 0, result.stderr.decode()
    assert (
        out.index("\u203a one\nfirst")
        < out.index("unknown command /nonsense")
        < out.index("\u203a two\nsecond")
    )
    assert len(server.requests) == 2


async def test_a_chat_on_dev_null_ends_at_once(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yml"
    config.write_text(deployment("http://127.0.0.1:9/v1"))
    result = await anyio.run_process(
        [*DSH, "chat", "--config", str(config), "--store", str(tmp_path / "s.db")],
        stdin=subprocess.DEVNULL,
        env=plain_env(),
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert "continue it with: dsh chat --session" in result.stderr.decode()


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
REPLAYED = Path(__file__).resolve().parents[3] / "fixtures" / "harness" / "multi-turn"


@pytest.mark.parametrize("term", ["dumb", "xterm"])
async def test_line_editing_keeps_only_the_text_and_a_history_beside_the_store(
    tmp_path: Path, term: str
) -> None:
    prompt = PROMPT if term == "dumb" else PROMPT.strip()  # a full terminal moves the cursor over the space
    store = tmp_path / "sessions.db"
    options = ("--replay", str(REPLAYED), "--store", str(store), "--cwd", str(tmp_path))
    chat = Terminal(*options, cwd=tmp_path, env={"TERM": term})
    session = _ANSI.sub("", (await chat.expect(r"session (\S+) · new"))[1])
    await chat.expect_exact(prompt)
    chat.child.send("abc\x1b[D\x1b[DX\r")  # Left, Left: "aXbc"
    await chat.expect_exact("ONE")
    await chat.expect_exact(prompt)
    chat.child.send("\x1b[A\r")  # Up recalls the line before
    await chat.expect_exact("TWO")
    await chat.expect_exact(prompt)
    chat.send("/fork")
    await chat.expect_exact("a fork has no recording")
    await chat.expect_exact(prompt)
    chat.child.send("\x1b[200~three\nand four\x1b[201~\r")  # a pasted block is one message
    await chat.expect_exact("the recording has no turn 3 (")
    await chat.expect_exact("holds 2 turns); a replay goes only as far as its recording")
    await chat.expect_exact(prompt)
    chat.child.send(
        "\x12Xb\r\r"
    )  # Ctrl-R searches the history; Enter takes the line found, a second sends it
    await chat.expect_exact("the recording has no turn 4 (")
    await chat.expect_exact(prompt)
    chat.child.send("\x04")  # Ctrl-D leaves
    hint = await chat.expect(r"continue it with: (dsh chat --session .*)\r?\n")
    assert _ANSI.sub("", hint[1]).split() == [
        "dsh",
        "chat",
        "--session",
        session,
        "--store",
        str(store),
        "--replay",
        str(REPLAYED),
    ]
    assert await chat.wait_exit() == 0
    for private in (
        store,
        tmp_path / "sessions.db.chat-history",
    ):  # what was said and typed: the owner's only
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    with SessionStore(store) as opened:
        typed = [
            block.text
            for event in opened.events(session, types=("user/message",))
            if isinstance((message := event.decode_data()).source, UserSource)
            for block in message.content
            if isinstance(block, TextBlock)
        ]
    assert typed == ["aXbc", "aXbc", "three\nand four", "aXbc"]
    assert "+aXbc" in (tmp_path / "sessions.db.chat-history").read_text()


async def test_a_replayed_hang_cancelled_leaves_no_ready_file_in_the_workspace(tmp_path: Path) -> None:
    cancel = REPLAYED.parent / "cancel"
    work = tmp_path / "work"
    work.mkdir()
    chat = Terminal("--replay", str(cancel), "--store", str(tmp_path / "s.db"), "--cwd", str(work), cwd=work)
    await chat.expect_exact(PROMPT)
    chat.send("go on")
    with anyio.fail_after(20):
        while not (work / ".dsh-stream-ready").exists():  # noqa: ASYNC110  # the hang's only signal is a file
            await anyio.sleep(0.02)
    chat.child.sendintr()
    await chat.expect_exact("turn 1 aborted")
    await chat.expect_exact(PROMPT)
    chat.child.send("\x04")
    assert await chat.wait_exit() == 0
    assert list(work.iterdir()) == []


async def test_a_line_typed_during_a_turn_steers_it_and_a_cancelled_turn_leaves_it_to_the_next(
    tmp_path: Path,
) -> None:
    async with loopback(partial_then_hang("partial"), answer("second answer")) as server:
        config = tmp_path / "deployment.yml"
        config.write_text(deployment(server.base_url))
        store = tmp_path / "sessions.db"
        chat = Terminal("--config", str(config), "--store", str(store), cwd=tmp_path)
        session = (await chat.expect(r"session (\S+) · new"))[1]
        await chat.expect_exact(PROMPT)
        chat.send("first")
        await chat.expect_exact("partial")
        chat.child.send("then \x1b[Dthis\r")  # typed mid-turn; the Left arrow means nothing there
        await chat.expect_exact("queued: then this · enters this turn at its next step")
        chat.child.sendintr()  # Ctrl-C still cancels the running turn, before its next step
        await chat.expect_exact("turn 1 aborted")
        await chat.expect_exact("entering this step: then this")  # so the steering starts the next turn
        await chat.expect_exact("second answer")
        await chat.expect_exact(PROMPT)
        chat.child.send("\x04")
        assert await chat.wait_exit() == 0
    with SessionStore(store) as opened:
        typed = [
            block.text
            for event in opened.events(session, types=("user/message",))
            if isinstance((message := event.decode_data()).source, UserSource)
            for block in message.content
            if isinstance(block, TextBlock)
        ]
        ends = [e.decode_data().reason.kind for e in opened.events(session, types=("turn/end",))]
        splices = [json.loads(e.data) for e in opened.events(session, types=("agent/inbox/spliced",))]
    assert typed == ["first", "then this"]
    assert ends == ["aborted", "completed"]
    # the steering was queued for the next step while turn 1 ran, and claimed by turn 2
    assert [(s["target"], s.get("removedCount")) for s in splices] == [
        ("next-turn", None),
        ("next-turn", 1),
        ("next-step", None),
        ("next-step", 1),
    ]
    assert "+then this" in (tmp_path / "sessions.db.chat-history").read_text()
