"""`dsh acp` end to end: the server as a subprocess, the agent-client-protocol SDK's client driving it, and the
model served by a loopback OpenAI-compatible server through dsh.plugins.llm_openai."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import anyio
import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    ContentToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from dsh.runtime.session import SessionStore
from tests.plugins.acp.harness import Recorder, dsh_acp, kinds, text_of, write_deployment
from tests.plugins.llm_openai.loopback import Reply, loopback
from tests.runtime.cli.helpers import DSH, answer, bash_call, partial_then_hang, plain_env

pytestmark = pytest.mark.anyio


async def test_a_prompt_turn_streams_thought_text_and_a_bash_call(tmp_path: Path) -> None:
    recorder = Recorder()
    async with loopback(bash_call("echo from-bash"), answer("all done", reasoning="let me see")) as server:
        config = write_deployment(tmp_path / "deployment.yml", server.base_url)
        async with dsh_acp(tmp_path, config, recorder) as (conn, _):
            with anyio.fail_after(60):
                init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
                session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                response = await conn.prompt(
                    session_id=session.session_id, prompt=[text_block("echo something")]
                )

    assert init.protocol_version == PROTOCOL_VERSION
    assert init.agent_capabilities is not None
    assert init.agent_capabilities.load_session
    assert init.agent_info is not None
    assert init.agent_info.name == "dsh"
    assert response.stop_reason == "end_turn"
    updates = recorder.of(session.session_id)
    assert kinds(updates) == ["tool_call", "tool_call_update", "agent_thought_chunk", "agent_message_chunk"]
    call, result = updates[0], updates[1]
    assert isinstance(call, ToolCallStart)
    assert (call.tool_call_id, call.title, call.kind, call.status) == (
        "call_1",
        "bash: echo from-bash",
        "execute",
        "in_progress",
    )
    assert call.raw_input == {"command": "echo from-bash", "description": "run it"}
    assert isinstance(result, ToolCallProgress)
    assert (result.tool_call_id, result.status) == ("call_1", "completed")
    assert result.content is not None
    assert isinstance(result.content[0], ContentToolCallContent)
    assert isinstance(result.content[0].content, TextContentBlock)
    assert "from-bash" in result.content[0].content.text
    assert text_of(updates, AgentThoughtChunk) == "let me see"
    assert text_of(updates, AgentMessageChunk) == "all done"
    assert len([u for u in updates if isinstance(u, AgentMessageChunk)]) == 2, "text streams as it arrives"
    system = server.requests[0].json()["messages"][0]
    assert system["role"] == "system"
    assert f"work in {tmp_path}." in system["content"], "the client's cwd is {{cwd}}"


async def test_cancel_mid_stream_answers_cancelled_and_logs_the_turn_aborted(tmp_path: Path) -> None:
    recorder = Recorder()
    async with loopback(partial_then_hang("partial"), answer("after")) as server:
        config = write_deployment(tmp_path / "deployment.yml", server.base_url)
        async with dsh_acp(tmp_path, config, recorder) as (conn, _):
            with anyio.fail_after(60):
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                responses = []

                async def prompt() -> None:
                    responses.append(await conn.prompt(session_id=sid, prompt=[text_block("go on")]))

                async with anyio.create_task_group() as group:
                    group.start_soon(prompt)
                    await recorder.wait_for(
                        lambda seen: text_of([u for _, u in seen], AgentMessageChunk) == "partial"
                    )
                    with pytest.raises(RequestError) as busy:
                        await conn.prompt(session_id=sid, prompt=[text_block("me too")])
                    await conn.cancel(session_id=sid)
                await server.client_closed.wait()
                again = await conn.prompt(session_id=sid, prompt=[text_block("and now?")])

    assert busy.value.code == -32600
    assert [r.stop_reason for r in responses] == ["cancelled"]
    assert again.stop_reason == "end_turn", "the session goes on after a cancelled turn"
    assert text_of(recorder.of(sid), AgentMessageChunk) == "partialafter"
    with SessionStore(tmp_path / "sessions.db") as store:
        ends = [e.decode_data().reason.kind for e in store.events(sid, types=("turn/end",))]
        kept = [e.decode_data() for e in store.events(sid, types=("assistant/message",))]
    assert ends == ["aborted", "completed"]
    assert kept[0].interrupted
    assert kept[0].message.content[0].text == "partial"


async def test_closing_stdin_mid_turn_aborts_the_turn_answers_cancelled_and_exits_cleanly(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    answers: list[str] = []
    async with loopback(partial_then_hang("partial")) as server:
        config = write_deployment(tmp_path / "deployment.yml", server.base_url)
        with anyio.fail_after(60):
            async with dsh_acp(tmp_path, config, recorder) as (conn, process):
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                async with anyio.create_task_group() as group:

                    async def prompt() -> None:
                        response = await conn.prompt(session_id=sid, prompt=[text_block("go on")])
                        answers.append(response.stop_reason)

                    group.start_soon(prompt)
                    await recorder.wait_for(lambda seen: len(seen) > 0)
                    process.stdin.close()
            # dsh_acp checked the exit status: 0
    with SessionStore(tmp_path / "sessions.db") as store:
        ends = [e.decode_data().reason.kind for e in store.events(sid, types=("turn/end",))]
    assert ends == ["aborted"]
    assert answers == ["cancelled"], "the prompt pending when stdin closed is still answered"


async def test_requests_pending_when_stdin_closes_are_answered(tmp_path: Path) -> None:
    root = Path(__file__).parents[3]
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL_VERSION}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(tmp_path), "mcpServers": []},
        },
    ]
    command = [*DSH, "acp", "--replay", str(root / "fixtures" / "harness" / "text-turn"), "--store"]
    with anyio.fail_after(60):
        ran = await anyio.run_process(
            [*command, str(tmp_path / "s.db")],
            input="".join(json.dumps(r) + "\n" for r in requests).encode(),
            env=plain_env(),
            check=True,
        )
    answered = [json.loads(line) for line in ran.stdout.decode().splitlines()]
    assert [(m["id"], "result" in m) for m in answered] == [(1, True), (2, True)]
    assert answered[1]["result"]["sessionId"]


async def test_load_replays_a_stored_session_and_continues_it(tmp_path: Path) -> None:
    first = Recorder()
    replies = [bash_call("echo from-bash"), answer("all done", reasoning="let me see"), answer("still here")]
    async with loopback(*replies) as server:
        config = write_deployment(tmp_path / "deployment.yml", server.base_url)
        async with dsh_acp(tmp_path, config, first) as (conn, _):
            with anyio.fail_after(60):
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=[text_block("echo something")])

        second = Recorder()
        async with dsh_acp(tmp_path, config, second) as (conn, _):
            with anyio.fail_after(60):
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                listed = await conn.list_sessions()
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                replayed = list(second.of(sid))
                response = await conn.prompt(session_id=sid, prompt=[text_block("are you there?")])

    assert [info.session_id for info in listed.sessions] == [sid]
    assert kinds(replayed) == [
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_thought_chunk",
        "agent_message_chunk",
    ]
    assert text_of(replayed, UserMessageChunk) == "echo something"
    assert text_of(replayed, AgentMessageChunk) == "all done"
    assert text_of(replayed, AgentThoughtChunk) == "let me see"
    assert [u.status for u in replayed if isinstance(u, ToolCallProgress)] == ["completed"]
    assert response.stop_reason == "end_turn"
    said = [
        m.get("content") for m in server.requests[-1].json()["messages"] if m["role"] in ("user", "assistant")
    ]
    assert said == ["echo something", "", "all done", "are you there?"]


async def test_fork_continues_a_copy_of_the_conversation(tmp_path: Path) -> None:
    recorder = Recorder()
    async with loopback(answer("first answer"), answer("in the fork")) as server:
        config = write_deployment(tmp_path / "deployment.yml", server.base_url)
        async with dsh_acp(tmp_path, config, recorder) as (conn, _):
            with anyio.fail_after(60):
                init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=[text_block("remember MARMALADE")])
                fork = await conn.fork_session(session_id=sid, cwd=str(tmp_path), mcp_servers=[])
                response = await conn.prompt(session_id=fork.session_id, prompt=[text_block("what was it?")])
                await conn.close_session(session_id=fork.session_id)
                with pytest.raises(RequestError):
                    await conn.prompt(session_id=fork.session_id, prompt=[text_block("closed?")])

    capabilities = init.agent_capabilities
    assert capabilities is not None
    assert capabilities.session_capabilities is not None
    assert capabilities.session_capabilities.fork is not None
    assert fork.session_id != sid
    assert response.stop_reason == "end_turn"
    said = [
        m.get("content") for m in server.requests[-1].json()["messages"] if m["role"] in ("user", "assistant")
    ]
    assert said == ["remember MARMALADE", "first answer", "what was it?"]
    with SessionStore(tmp_path / "sessions.db") as store:
        assert store.info(fork.session_id).parent_id == sid


async def test_errors_answer_json_rpc_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    recorder = Recorder()
    denied = Reply(status=401, headers={"content-type": "application/json"}, parts=[b'{"error": "no"}'])
    async with loopback(denied, answer("fine")) as server:
        config = write_deployment(tmp_path / "deployment.yml", server.base_url)
        async with dsh_acp(tmp_path, config, recorder) as (conn, _):
            with anyio.fail_after(60):
                with pytest.raises(RequestError) as early:
                    await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                with pytest.raises(RequestError) as unknown:
                    await conn.prompt(session_id="no-such-session", prompt=[text_block("hello?")])
                with pytest.raises(RequestError) as not_stored:
                    await conn.load_session(cwd=str(tmp_path), session_id="no-such-session", mcp_servers=[])
                with pytest.raises(RequestError) as relative:
                    await conn.new_session(cwd="relative/dir", mcp_servers=[])
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                with pytest.raises(RequestError) as failed:
                    await conn.prompt(session_id=sid, prompt=[text_block("first try")])
                response = await conn.prompt(session_id=sid, prompt=[text_block("second try")])

    assert early.value.code == -32600
    assert "initialize" in str(early.value)
    assert unknown.value.code == -32602
    assert "no-such-session" in str(unknown.value)
    assert not_stored.value.code == -32602
    assert "no-such-session" in str(not_stored.value)
    assert relative.value.code == -32602
    assert failed.value.code == -32603
    assert str(failed.value).startswith("Internal error: turn failed:")
    assert failed.value.data == {"code": "AUTH", "sessionId": sid, "turn": 1}
    assert response.stop_reason == "end_turn"
    assert text_of(recorder.of(sid), AgentMessageChunk) == "fine"


async def test_malformed_json_rpc_gets_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    recorder = Recorder()
    config = write_deployment(tmp_path / "deployment.yml", "http://127.0.0.1:9/v1")
    raw = [
        b"{this is not json\n",
        b"\xff\xfe not utf-8\n",
        b"[1, 2]\n",
        b'{"jsonrpc": "2.0", "id": "raw-1", "method": 5}\n',
        b'{"jsonrpc": "1.0", "id": "raw-2", "method": "initialize"}\n',
        b'{"jsonrpc": "2.0", "id": "raw-3", "method": "session/nope", "params": {}}\n',
        b'{"jsonrpc": "2.0", "id": "raw-4", "method": "session/new", "params": {"cwd": 5}}\n',
        b'{"jsonrpc": "2.0", "id": "raw-5"}\n',
        b"\n",
    ]
    async with dsh_acp(tmp_path, config, recorder) as (conn, process):
        with anyio.fail_after(60):
            for line in raw:
                process.stdin.write(line)
            await process.stdin.drain()
            init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])

    errors = [(m.get("id"), m["error"]["code"]) for m in recorder.incoming if "error" in m]
    # the transport answers in line order; the requests it passes on are answered by tasks of their own
    assert sorted(errors, key=str) == sorted(
        [
            (None, -32700),
            (None, -32700),
            (None, -32600),
            ("raw-1", -32600),
            ("raw-2", -32600),
            ("raw-3", -32601),
            ("raw-4", -32602),
            ("raw-5", -32600),
        ],
        key=str,
    )
    assert init.protocol_version == PROTOCOL_VERSION
    assert session.session_id


async def test_replay_serves_the_originals_recording_to_a_real_client(tmp_path: Path) -> None:
    """`dsh acp --replay`: the original's `text-turn` recording answers PONG with no key and no network."""
    root = Path(__file__).parents[3]
    recorder = Recorder()
    extra = ("--replay", str(root / "fixtures" / "harness" / "text-turn"))
    async with dsh_acp(tmp_path, root / "examples" / "acp-agent.yml", recorder, extra=extra) as (conn, _):
        with anyio.fail_after(60):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("Reply PONG")])
    assert response.stop_reason == "end_turn"
    assert text_of(recorder.of(session.session_id), AgentMessageChunk) == "PONG"


async def test_a_deeply_nested_line_gets_a_parse_error_and_the_session_then_completes_a_prompt(
    tmp_path: Path,
) -> None:
    """200 KB of `[[[...` on one line: a JSON-RPC parse error, not a dead server; a prompt then completes."""
    root = Path(__file__).parents[3]
    recorder = Recorder()
    extra = ("--replay", str(root / "fixtures" / "harness" / "text-turn"))
    async with dsh_acp(tmp_path, root / "examples" / "acp-agent.yml", recorder, extra=extra) as (
        conn,
        process,
    ):
        with anyio.fail_after(60):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            process.stdin.write(b"[" * 200_000 + b"\n")
            process.stdin.write(
                b'{"jsonrpc": "2.0", "id": "deep", "method": "x", "params": ' + b'{"a":' * 5000 + b"\n"
            )
            await process.stdin.drain()
            response = await conn.prompt(session_id=session.session_id, prompt=[text_block("Reply PONG")])
    errors = [(m.get("id"), m["error"]["code"]) for m in recorder.incoming if "error" in m]
    assert errors == [(None, -32700), (None, -32700)]
    assert response.stop_reason == "end_turn"
    assert text_of(recorder.of(session.session_id), AgentMessageChunk) == "PONG"


async def test_loading_a_session_another_server_holds_is_refused_naming_the_holder(tmp_path: Path) -> None:
    root = Path(__file__).parents[3]
    config, store = root / "examples" / "acp-agent.yml", tmp_path / "shared.db"
    extra = ("--replay", str(root / "fixtures" / "harness" / "text-turn"))
    first, second = Recorder(), Recorder()
    async with dsh_acp(tmp_path, config, first, store=store, extra=extra) as (conn, holder):
        with anyio.fail_after(60):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            async with dsh_acp(tmp_path, config, second, store=store, extra=extra) as (other, _):
                await other.initialize(protocol_version=PROTOCOL_VERSION)
                with pytest.raises(RequestError) as refused:
                    await other.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            response = await conn.prompt(session_id=sid, prompt=[text_block("Reply PONG")])
    assert refused.value.code == -32600
    assert str(refused.value).startswith(f"session {sid} is in use by pid {holder.pid} on ")
    assert refused.value.data == {"sessionId": sid, "pid": holder.pid, "host": socket.gethostname()}
    assert response.stop_reason == "end_turn", "the holder's session is untouched"
    with SessionStore(store) as opened:
        assert [e.seq for e in opened.events(sid)] == list(range(opened.length(sid)))


async def test_stdin_and_stdout_may_be_regular_files(tmp_path: Path) -> None:
    """`dsh acp < requests.jsonl > answers.jsonl`: asyncio's pipe transports refuse regular files; dsh reads and
    writes them directly."""
    root = Path(__file__).parents[3]
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        "".join(
            json.dumps(request) + "\n"
            for request in (
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": PROTOCOL_VERSION},
                },
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "session/new",
                    "params": {"cwd": str(tmp_path), "mcpServers": []},
                },
            )
        )
    )
    answers = tmp_path / "answers.jsonl"
    command = [*DSH, "acp", "--replay", str(root / "fixtures" / "harness" / "text-turn"), "--store"]
    with requests.open("rb") as stdin, answers.open("wb") as stdout, anyio.fail_after(60):
        await anyio.run_process(
            [*command, str(tmp_path / "s.db")], stdin=stdin, stdout=stdout, env=plain_env()
        )
    answered = [json.loads(line) for line in answers.read_text().splitlines()]
    assert [(m["id"], "result" in m) for m in answered] == [(1, True), (2, True)]


@pytest.mark.parametrize("stdin", ["devnull", "closed-pipe"])
async def test_stdin_at_its_end_or_dev_null_exits_0_without_a_traceback(tmp_path: Path, stdin: str) -> None:
    """What CI, nohup and systemd give `dsh acp`: /dev/null (a device asyncio's pipe transports refuse) or a pipe
    already at its end. The server sees the end of input and exits 0."""
    root = Path(__file__).parents[3]
    command = [*DSH, "acp", "--replay", str(root / "fixtures" / "harness" / "text-turn"), "--store"]
    with anyio.fail_after(60):
        if stdin == "devnull":
            ran = await anyio.run_process(
                [*command, str(tmp_path / "s.db")], stdin=subprocess.DEVNULL, env=plain_env(), check=False
            )
        else:
            ran = await anyio.run_process(
                [*command, str(tmp_path / "s.db")], input=b"", env=plain_env(), check=False
            )
    assert (ran.returncode, ran.stdout, ran.stderr.decode()) == (0, b"", "")


async def test_a_loaded_session_continues_from_the_recordings_next_turn(tmp_path: Path) -> None:
    """session/load then session/prompt with `--replay`: the prompt is served the recording's turn 2 (it once
    waited forever for the recording's turn-1 input); one more says in one line that the recording has no turn 3."""
    root = Path(__file__).parents[3]
    config, store = root / "examples" / "acp-agent.yml", tmp_path / "s.db"
    extra = ("--replay", str(root / "fixtures" / "harness" / "multi-turn"))
    first, second = Recorder(), Recorder()
    async with dsh_acp(tmp_path, config, first, store=store, extra=extra) as (conn, _):
        with anyio.fail_after(60):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("one")])
    async with dsh_acp(tmp_path, config, second, store=store, extra=extra) as (conn, _):
        with anyio.fail_after(60):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            second.clear()
            response = await conn.prompt(session_id=sid, prompt=[text_block("two")])
            said = text_of(second.of(sid), AgentMessageChunk)
            second.clear()
            past: Exception | None = None
            try:
                await conn.prompt(session_id=sid, prompt=[text_block("three")])
            except RequestError as error:
                past = error
    assert text_of(first.of(sid), AgentMessageChunk) == "ONE"
    assert (response.stop_reason, said) == ("end_turn", "TWO")
    assert past is not None
    assert "the recording has no turn 3" in str(past)


async def test_compact_is_an_available_command_that_compacts_the_session(tmp_path: Path) -> None:
    recorder = Recorder()
    compaction: dict[str, object] = {"id": "compaction", "use": "compaction", "config": {"prune": False}}
    replies = (answer("first answer"), answer("second answer"), answer("Summary: they said hello twice."))
    async with loopback(*replies) as server:
        config = write_deployment(tmp_path / "deployment.yml", server.base_url, extra=(compaction,))
        async with dsh_acp(tmp_path, config, recorder) as (conn, _):
            with anyio.fail_after(60):
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                await recorder.wait_for(lambda u: any(isinstance(x, AvailableCommandsUpdate) for _, x in u))
                for word in ("hello ", "again "):
                    await conn.prompt(session_id=session.session_id, prompt=[text_block(word * 400)])
                response = await conn.prompt(session_id=session.session_id, prompt=[text_block("/compact")])
    updates = recorder.of(session.session_id)
    offered = [u for u in updates if isinstance(u, AvailableCommandsUpdate)]
    assert [c.name for c in offered[0].available_commands] == ["compact"]
    said = text_of(updates, AgentMessageChunk)
    assert said.startswith("first answersecond answerCompacted: a summary replaced older messages. History ")
    assert said.endswith(" tokens (estimated).")
    assert response.stop_reason == "end_turn"
    with SessionStore(tmp_path / "sessions.db") as store:
        types = [e.type for e in store.events(session.session_id)]
    assert types.count("compaction/summary") == 1
    assert types.count("turn/start") == 2  # /compact is a command, not a turn


NOISY = (
    "import os, sys\n"
    "from dsh.runtime.kernel import Plugin\n"
    "print('NOISE at import')\n"
    "def _apply(ctx, config):\n"
    "    print('NOISE at apply', flush=True)\n"
    "    os.write(1, b'NOISE from C level\\n')\n"
    "plugin = Plugin(name='noisy', apply=_apply)\n"
)


async def test_nothing_a_plugin_prints_reaches_the_protocols_stdout(tmp_path: Path) -> None:
    (tmp_path / "noisy_plugin.py").write_text(NOISY)
    config = tmp_path / "deployment.yml"
    deployed = json.loads((write_deployment(tmp_path / "base.yml", "http://127.0.0.1:9/v1")).read_text())
    deployed["plugins"].insert(0, {"id": "noisy", "use": "noisy_plugin"})
    config.write_text(json.dumps(deployed))
    requests = b"".join(
        json.dumps(request).encode() + b"\n"
        for request in (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": PROTOCOL_VERSION},
            },
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/new",
                "params": {"cwd": str(tmp_path), "mcpServers": []},
            },
        )
    )
    root = Path(__file__).parents[3]
    with anyio.fail_after(60):
        done = await anyio.run_process(  # stdout a pipe: asyncio's pipe transport
            [*DSH, "acp", "--config", str(config), "--store", str(tmp_path / "s.db")],
            input=requests,
            env=plain_env(PYTHONPATH=f"{tmp_path}:{root}"),
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    answered = [json.loads(line) for line in done.stdout.decode().splitlines()]  # every line is JSON-RPC
    assert [(m["id"], "result" in m) for m in answered] == [(1, True), (2, True)]
    for noise in (b"NOISE at import", b"NOISE at apply", b"NOISE from C level"):
        assert noise in done.stderr
