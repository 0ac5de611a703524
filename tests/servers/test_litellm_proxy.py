"""dsh against a server nobody here wrote: LiteLLM's OpenAI-compatible proxy on 127.0.0.1, its models a scripted
`CustomLLM` (litellm_handler.py). What the adapter's loopback tests prove against hand-made streams, proved again
against the proxy's own: text, reasoning, tool calls (one sent with `finish_reason: stop`), parallel calls, usage
(the proxy's own count, reasoning tokens included), mid-stream errors with string codes, a slow stream; then `dsh run` with a retry, and `dsh record`
of a turn through the proxy replayed by `dsh replay` once the proxy is killed mid-stream (the last test: it ends the
session's proxy)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from dsh.runtime.llm import (
    BlockEnd,
    Finish,
    FinishError,
    FinishStop,
    FinishToolCalls,
    LlmFailure,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    UsageChunk,
)
from tests.plugins.llm_openai.helpers import collect, hello
from tests.runtime.cli.helpers import DSH, deployment
from tests.servers.litellm_proxy import MASTER_KEY, LiteLLMProxy

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("litellm-proxy")]

ENV = {"TEST_KEY": MASTER_KEY}


async def through(proxy: LiteLLMProxy, scenario: str, **overrides: Any) -> list[StreamChunk]:
    return await collect(proxy.base_url, hello(model=scenario), env=ENV, **overrides)


def blocks(chunks: list[StreamChunk]) -> list[object]:
    return [c.block for c in chunks if isinstance(c, BlockEnd)]


def failure(chunks: list[StreamChunk]) -> LlmFailure:
    last = chunks[-1]
    assert isinstance(last, Finish)
    assert isinstance(last.reason, FinishError), last
    return last.reason.failure


async def test_streamed_text_with_usage(litellm_proxy: LiteLLMProxy) -> None:
    chunks = await through(litellm_proxy, "text")
    assert blocks(chunks) == [TextBlock("hello from the proxy")]
    assert chunks[-1] == Finish(reason=FinishStop())
    # the proxy counts the tokens itself (its own count, not the handler's): only that it reports them is known
    (usage,) = [c.usage for c in chunks if isinstance(c, UsageChunk)]
    assert usage.input_tokens > 0
    assert usage.output_tokens > 0


async def test_reasoning_then_text(litellm_proxy: LiteLLMProxy) -> None:
    chunks = await through(litellm_proxy, "reasoning")
    assert blocks(chunks) == [ReasoningBlock("thinking it over"), TextBlock("thought through")]


async def test_a_tool_call_sent_with_finish_stop_is_logged_tool_calls(litellm_proxy: LiteLLMProxy) -> None:
    chunks = await through(litellm_proxy, "tools")
    (text, call) = blocks(chunks)
    assert text == TextBlock("let me run it")
    assert isinstance(call, ToolCallBlock)
    assert (call.id, call.name) == ("call_bash_1", "bash")
    assert json.loads(call.arguments) == {"command": "echo from-bash", "description": "say it"}
    last = chunks[-1]
    assert isinstance(last, Finish)
    assert isinstance(last.reason, FinishToolCalls)
    assert last.provider_reason in (None, "stop")  # None: the proxy itself said tool_calls


async def test_parallel_calls_with_interleaved_fragments(litellm_proxy: LiteLLMProxy) -> None:
    chunks = await through(litellm_proxy, "parallel")
    calls = [b for b in blocks(chunks) if isinstance(b, ToolCallBlock)]
    assert [(c.id, json.loads(c.arguments)["command"]) for c in calls] == [
        ("call_a", "echo a"),
        ("call_b", "echo b"),
    ]
    assert chunks[-1] == Finish(reason=FinishToolCalls())


async def test_reasoning_tokens_in_the_proxys_usage(litellm_proxy: LiteLLMProxy) -> None:
    chunks = await through(litellm_proxy, "reasoning")
    (usage,) = [c.usage for c in chunks if isinstance(c, UsageChunk)]
    assert usage.reasoning_tokens is not None
    assert 0 < usage.reasoning_tokens <= usage.output_tokens


@pytest.mark.parametrize(
    ("scenario", "code", "status"),
    [
        ("rate-limit", "RATE_LIMIT", 429),
        ("auth", "AUTH", 401),
        ("server", "SERVER", 500),
        ("overflow", "CONTEXT_WINDOW_EXCEEDED", 400),
    ],
)
async def test_a_mid_stream_error_is_coded_by_the_proxys_string_code(
    litellm_proxy: LiteLLMProxy, scenario: str, code: str, status: int
) -> None:
    chunks = await through(litellm_proxy, scenario)
    assert blocks(chunks) == [TextBlock("half an ans")]  # the partial answer is ended, then the failure
    found = failure(chunks)
    assert (found.code, found.status) == (code, status)
    assert found.message.startswith("the provider reported an error mid-stream: ")
    assert found.request_id  # x-litellm-call-id: the proxy sends no x-request-id


async def test_a_slow_stream_completes(litellm_proxy: LiteLLMProxy) -> None:
    chunks = await through(litellm_proxy, "slow")
    assert blocks(chunks) == [TextBlock("slow but sure")]


async def dsh(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, str, str]:
    with anyio.fail_after(300):
        result = await anyio.run_process(
            [*DSH, *args], check=False, env={**os.environ, **(env or {})}, cwd=cwd
        )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def proxy_deployment(proxy: LiteLLMProxy, model: str, path: Path) -> Path:
    config = json.loads(
        deployment(proxy.base_url, key_env="DSH_LITELLM_KEY", retry={"max_retries": 2, "base_delay_ms": 50})
    )
    config["model"] = model
    path.write_text(json.dumps(config))
    return path


async def test_dsh_run_shows_the_retry_of_a_mid_stream_rate_limit(
    litellm_proxy: LiteLLMProxy, tmp_path: Path
) -> None:
    config = proxy_deployment(litellm_proxy, "flaky", tmp_path / "deployment.yml")
    code, out, err = await dsh(
        "run", "a flaky question", "--config", str(config), "--store", str(tmp_path / "s.db"),
        "--cwd", str(tmp_path), env={"DSH_LITELLM_KEY": MASTER_KEY},
    )  # fmt: skip
    assert code == 0, err
    assert out == "half an ans\nwhole answer\n"
    (retry,) = [line for line in err.splitlines() if line.startswith("retrying")]
    assert retry.startswith("retrying (1/2) after RATE_LIMIT in ")
    assert "upstream says slow down try again in a moment" in retry  # the proxy's blank lines folded
    assert retry.endswith("(the partial answer above was discarded)")


async def test_dsh_run_fails_a_mid_stream_auth_error_on_one_stderr_line(
    litellm_proxy: LiteLLMProxy, tmp_path: Path
) -> None:
    config = proxy_deployment(litellm_proxy, "auth", tmp_path / "deployment.yml")
    code, out, err = await dsh(
        "run", "hi", "--config", str(config), "--store", str(tmp_path / "s.db"), "--cwd", str(tmp_path),
        env={"DSH_LITELLM_KEY": MASTER_KEY},
    )  # fmt: skip
    assert code == 1
    assert out == "half an ans\n"
    (failed,) = [line for line in err.splitlines() if "failed" in line]
    assert failed.startswith("turn 1 failed: the provider reported an error mid-stream: ")
    assert "[AUTH] (request " in failed
    assert "retrying" not in err


async def test_record_through_the_proxy_then_replay_with_the_proxy_killed(
    litellm_proxy: LiteLLMProxy, tmp_path: Path
) -> None:
    scenario = tmp_path / "through-litellm"
    scenario.mkdir()
    proxy_deployment(litellm_proxy, "tools", scenario / "deployment.yml")
    (scenario / "scenario.yml").write_text(
        json.dumps({"deployment": "deployment.yml", "inputs": ["run echo through the proxy"]})
    )
    code, out, err = await dsh("record", str(scenario), env={"DSH_LITELLM_KEY": MASTER_KEY})
    assert code == 0, err
    assert "→ bash" in out  # record streams the turn as run does
    assert "the tool said: from-bash" in out
    log = (scenario / "session.jsonl").read_text()
    assert '"providerReason":"stop"' in log  # the proxy's finish_reason, beside the tool-calls finish

    # the proxy dies mid-stream (SIGKILL): the connection drops, and the failure says so
    async def kill_soon() -> None:
        await anyio.sleep(1.0)
        litellm_proxy.kill()

    async with anyio.create_task_group() as group:
        group.start_soon(kill_soon)
        chunks = await through(litellm_proxy, "stall", idle_timeout=120.0)
    assert failure(chunks).code in ("TRANSPORT", "STREAM_CLOSED")
    assert not litellm_proxy.running

    code, out, err = await dsh("replay", str(scenario), env={"DSH_LITELLM_KEY": ""})
    assert code == 0, out + err
    assert "matches" in out + err
