"""dsh's pytest plugin, used the way a user's project uses it: a throwaway project outside the repository, with its
own plugin module (a price tool, and a weather tool that reaches the network), its own deployment and two scenarios
recorded with an authored model, runs pytest (the `dsh` entry point loads as it would there) with no key and, for
the replays, no network. The goldens are written once, by `pytest --snapshot-update` in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs, urlparse

import pytest
import syrupy

from dsh.replay import record_scenario

pytest_plugins = ["pytester"]

FIXTURES = Path(__file__).parents[2] / "fixtures"

AGENT_MODULE = '''
"""A shop agent's tools: `price` reads a table; `weather` asks a web service (so it is not hermetic)."""
import os

import httpx

from dsh.runtime.kernel import Plugin
from dsh.runtime.tools import TOOLS, Tool

PRICES = {"apple": 3, "pear": 5}


async def price(arguments, context):
    return f"{arguments['item']} costs {PRICES[arguments['item']]} coins"


async def weather(arguments, context):
    url = os.environ["WEATHER_URL"]  # no network, no URL: calling this in a replay fails
    async with httpx.AsyncClient() as client:
        response = await client.get(url, params={"city": arguments["city"]})
    return response.text


def _apply(ctx, config):
    tools = ctx.get(TOOLS)
    item = {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}
    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools.register(Tool("price", "The price of an item in the shop.", item, price))
    tools.register(Tool("weather", "Today's weather in a city.", city, weather, hermetic=False))


plugin = Plugin(name="shop", apply=_apply, needs=(TOOLS,))
'''

DEPLOYMENT = """
plugins:
  - {id: prompt, use: prompt, config: {persona: "You are a shop assistant working in {{cwd}}."}}
  - {id: tools, use: tools}
  - {id: llm, use: llm}
  - {id: llm-openai, use: llm_openai}
  - {id: agent, use: agent}
  - {id: shop, use: shopagent}
"""

SCENARIOS = {
    "price": (
        "What does an apple cost?",
        """replies:
  - tool_calls: [{name: price, arguments: {item: apple}}]
  - text: An apple costs 3 coins.
""",
    ),
    "weather": (
        "What is the weather in Oslo?",
        """replies:
  - tool_calls: [{name: weather, arguments: {city: Oslo}}]
  - text: It is sunny in Oslo.
""",
    ),
}

CONFIG = """
[pytest]
dsh_scenarios = scenarios
pythonpath = .
"""


class _Weather(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        city = parse_qs(urlparse(self.path).query)["city"][0]
        body = f"sunny in {city}".encode()
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads the recording, not the server's log."""


def _build(project: Path) -> None:
    (project / "shopagent.py").write_text(AGENT_MODULE)
    (project / "agent.yml").write_text(DEPLOYMENT)
    (project / "pytest.ini").write_text(CONFIG)
    for name, (question, replies) in SCENARIOS.items():
        directory = project / "scenarios" / name
        directory.mkdir(parents=True)
        (directory / "scenario.yml").write_text(f"deployment: ../../agent.yml\ninputs:\n  - {question}\n")
        (directory / "replies.yml").write_text(replies)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project with both scenarios recorded (the weather service up, on 127.0.0.1) and its goldens written from
    the recordings with no key and no service."""
    project = tmp_path_factory.mktemp("shop")
    _build(project)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Weather)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    patch = pytest.MonkeyPatch()
    try:
        patch.setenv("WEATHER_URL", f"http://127.0.0.1:{server.server_address[1]}/today")
        patch.syspath_prepend(str(project))
        for name in SCENARIOS:
            record_scenario(project / "scenarios" / name, script=project / "scenarios" / name / "replies.yml")
    finally:
        patch.undo()
        sys.modules.pop("shopagent", None)
        server.shutdown()
        server.server_close()
        thread.join()
    # an xdist worker's variables would make the inner pytest act as a worker too (syrupy prints no report there)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DEEPSEEK_API_KEY", "WEATHER_URL") and not key.startswith("PYTEST_XDIST")
    }
    update = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--snapshot-update"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert update.returncode == 0, update.stdout + update.stderr
    assert "2 passed" in update.stdout, update.stdout
    assert "4 snapshots generated" in update.stdout, update.stdout
    return project


@pytest.fixture
def project(recorded: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of the recorded project as pytester's directory; no key, no weather service."""
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("WEATHER_URL", raising=False)
    shutil.copytree(recorded, pytester.path, dirs_exist_ok=True)
    return pytester.path


@pytest.fixture
def goldened(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project; syrupy's session global is put back after the test (an in-process run replaces it)."""
    monkeypatch.setattr(syrupy, "_syrupy", syrupy._syrupy)
    return project


@pytest.fixture(autouse=True)
def _not_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `-n`, this session's xdist variables would make each inner run act as a worker (syrupy reports
    nothing there): the inner runs are a project's own session."""
    for key in [key for key in os.environ if key.startswith("PYTEST_XDIST")]:
        monkeypatch.delenv(key)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)


def test_each_scenario_is_one_item_named_by_its_path_and_passes(
    goldened: Path, pytester: pytest.Pytester
) -> None:
    result = run(pytester, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["scenarios/price::replay PASSED*", "scenarios/weather::replay PASSED*"])
    result.stdout.fnmatch_lines(["*4 snapshots passed*"])
    # goldens live beside each scenario
    golden = (goldened / "scenarios" / "price" / "__snapshots__" / "scenario.ambr").read_text()
    assert "# name: replay[log]" in golden
    assert "# name: replay[view]" in golden
    assert '"system":"{{system}}"' in golden  # the prompt is the prompt golden's business, not this one's
    assert "apple costs 3 coins" in golden


def test_the_recorded_network_tool_replays_with_the_network_unavailable(
    goldened: Path, pytester: pytest.Pytester
) -> None:
    # WEATHER_URL is unset and the service is down: the weather tool would fail if it ran, and the replay passes
    result = run(pytester, "scenarios/weather")
    result.assert_outcomes(passed=1)
    # the same scenario with the tool forced live calls it, and the failed call differs from the golden
    spec = goldened / "scenarios" / "weather" / "scenario.yml"
    spec.write_text(spec.read_text() + "tools: {weather: live}\n")
    live = run(pytester, "scenarios/weather")
    live.assert_outcomes(failed=1)
    live.stdout.fnmatch_lines(["*+ replayed:*KeyError*WEATHER_URL*"])


def test_a_deployment_is_found_beside_the_scenario_then_at_the_rootdir(
    goldened: Path, pytester: pytest.Pytester
) -> None:
    spec = goldened / "scenarios" / "price" / "scenario.yml"
    spec.write_text(spec.read_text().replace("deployment: ../../agent.yml", "deployment: agent.yml"))
    run(pytester).assert_outcomes(passed=2)  # agent.yml is not beside the scenario: the rootdir's is used
    (goldened / "scenarios" / "price" / "agent.yml").write_text("plugins: []\n")
    beside = run(pytester, "scenarios/price")
    beside.assert_outcomes(failed=1)  # the one beside the scenario wins, and loads no live transport
    beside.stdout.fnmatch_lines(["*loads no live model transport*"])


def test_a_persona_edit_still_passes(goldened: Path, pytester: pytest.Pytester) -> None:
    deployment = goldened / "agent.yml"
    deployment.write_text(deployment.read_text().replace("a shop assistant", "a terse shop clerk"))
    result = run(pytester)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*4 snapshots passed*"])


def test_a_changed_tool_result_fails_with_the_divergence_report_and_update_refreshes_it(
    goldened: Path, pytester: pytest.Pytester
) -> None:
    module = goldened / "shopagent.py"
    module.write_text(module.read_text().replace('"apple": 3', '"apple": 4'))
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*scenario scenarios/price: the replayed log differs from its golden __snapshots__/scenario.ambr "
            "[[]replay[[]log]]",
            "*first difference at golden line * (tool/result, seq *, turn 1 step 1, call call_1_0)*",
            "*- golden (the recording):*apple costs 3 coins*",
            "*+ replayed:*apple costs 4 coins*",
            "reproduce: dsh replay scenarios/price",
            "*pytest --snapshot-update scenarios/price",
            "(the view golden differs too)",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert "_pytest_plugin.py" not in result.stdout.str()
    verbose = run(pytester, "-vv", "scenarios/price")
    verbose.assert_outcomes(failed=1)
    assert "_pytest_plugin.py" in verbose.stdout.str()  # -vv shows where in dsh it failed
    # -x stops at the first failure; --lf reruns only it (the cache is on for these two runs)
    stopped = pytester.runpytest_inprocess("-x")
    stopped.assert_outcomes(failed=1)
    again = pytester.runpytest_inprocess("--lf")
    again.assert_outcomes(failed=1, deselected=1)
    updated = run(pytester, "--snapshot-update")
    updated.assert_outcomes(passed=2)
    updated.stdout.fnmatch_lines(
        ["*2 snapshots updated*"]
    )  # the log and the view (it shows the tool's output)
    run(pytester).assert_outcomes(passed=2)


def test_a_diverging_replay_reports_the_first_differing_call(
    goldened: Path, pytester: pytest.Pytester
) -> None:
    # the recording's tool/call says pear; its model (the chunks the replay serves) asks for an apple
    log = goldened / "scenarios" / "price" / "session.jsonl"
    lines = [
        line.replace("apple", "pear") if '"type":"tool/call"' in line else line
        for line in log.read_text().splitlines(keepends=True)
    ]
    log.write_text("".join(lines))
    result = run(pytester, "scenarios/price")
    result.assert_outcomes(failed=1)
    assert "Traceback" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "scenario scenarios/price diverged from its recording:",
            "*the primary session: first divergence at skeleton line 3:",
            "*turn 1",
            "*step 1.1",
            '*- recorded:*call price {"item": "pear"}',
            '*+ replayed:*call price {"item": "apple"}',
            "reproduce: dsh replay scenarios/price",
        ]
    )
    assert "unused" not in result.stdout.str()
    # --snapshot-update refreshes no golden from a diverging replay, and deletes none
    golden = goldened / "scenarios" / "price" / "__snapshots__" / "scenario.ambr"
    before = golden.read_bytes()
    run(pytester, "--snapshot-update").assert_outcomes(passed=1, failed=1)
    assert golden.read_bytes() == before


def test_a_scenario_that_cannot_run_fails_readably_and_keeps_its_goldens(
    goldened: Path, pytester: pytest.Pytester
) -> None:
    spec = goldened / "scenarios" / "price" / "scenario.yml"
    spec.write_text(spec.read_text() + "inptus: [typo]\n")
    golden = goldened / "scenarios" / "price" / "__snapshots__" / "scenario.ambr"
    before = golden.read_bytes()
    result = run(pytester, "--snapshot-update")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["scenario scenarios/price: ScriptError: *scenario.yml: bad scenario.yml: *inptus*"]
    )
    assert "Traceback" not in result.stdout.str()
    assert "deleted" not in result.stdout.str()
    assert golden.read_bytes() == before


def test_k_selects_and_unused_goldens_are_reported(goldened: Path, pytester: pytest.Pytester) -> None:
    result = run(pytester, "-k", "weather")
    result.assert_outcomes(passed=1, deselected=1)
    golden = goldened / "scenarios" / "price" / "__snapshots__" / "scenario.ambr"
    golden.write_text(golden.read_text() + "# name: replay[stale]\n  'left over'\n# ---\n")
    unused = run(pytester)
    unused.stdout.fnmatch_lines(["*1 snapshot unused*"])
    assert unused.ret != 0
    cleaned = run(pytester, "--snapshot-update")
    cleaned.stdout.fnmatch_lines(["*1 unused snapshot deleted*"])
    assert "stale" not in golden.read_text()
    # a scenario directory that lost its scenario.yml keeps goldens nobody uses
    (goldened / "scenarios" / "weather" / "scenario.yml").unlink()
    orphaned = run(pytester)
    orphaned.assert_outcomes(passed=1)
    orphaned.stdout.fnmatch_lines(["*2 snapshots unused*"])
    assert orphaned.ret != 0
    run(pytester, "--snapshot-update").stdout.fnmatch_lines(["*2 unused snapshots deleted*"])
    assert not (goldened / "scenarios" / "weather" / "__snapshots__" / "scenario.ambr").exists()
    run(pytester).assert_outcomes(passed=1)


def test_scenarios_spread_across_two_workers(goldened: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*2 workers*", "*scheduling tests via WorkStealingScheduling*"])
    # the same items pass as in one process, with the same goldens
    alone = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-v")
    alone.assert_outcomes(passed=2)
    passed = sorted(line.split()[-1] for line in result.outlines if " PASSED " in line)
    assert passed == sorted(line.split()[0] for line in alone.outlines if " PASSED " in line)
    assert len(passed) == 2
    assert "4 snapshots passed" in result.stdout.str()
    # a scheduling the user names is kept
    chosen = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-v", "--dist", "load")
    chosen.assert_outcomes(passed=2)
    chosen.stdout.fnmatch_lines(["*scheduling tests via LoadScheduling*"])


def test_collecting_scenarios_imports_nothing_that_replays_them(goldened: Path) -> None:
    # collection reads no scenario: under xdist every worker collects every scenario before any runs, and
    # `--collect-only` or a `-k` selection should not pay for the replay machinery
    code = (
        "import sys\nimport pytest\n"
        "pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:randomly', '-p', 'no:xdist', '--collect-only'])\n"
        "heavy = ('msgspec', 'yaml', 'jsonschema', 'dsh.runtime.session', 'dsh.runtime.kernel', 'dsh.runtime.agent', "
        "'dsh.replay.driver._rerun', 'dsh.replay.driver._scenario', 'plugins.')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_XDIST")}
    ran = subprocess.run(
        [sys.executable, "-c", code],
        cwd=goldened,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert "2 tests collected" in ran.stdout, ran.stdout
    assert ran.stdout.strip().splitlines()[-1] == "[]"


def test_dsh_record_skips_a_route_without_its_key(goldened: Path, pytester: pytest.Pytester) -> None:
    result = run(pytester, "--dsh-record", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        ["*--dsh-record: route deepseek-official needs its key in DEEPSEEK_API_KEY, which is not set*"]
    )


class _Model(BaseHTTPRequestHandler):
    """A live model on 127.0.0.1 speaking the OpenAI-compatible streaming API: it answers every request in text."""

    requests: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.requests.append({"path": self.path, "authorization": self.headers.get("authorization", "")})
        chunks = [
            {"choices": [{"index": 0, "delta": {"content": "Apples cost "}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {"content": "3 coins, live."}, "finish_reason": "stop"}]},
        ]
        body = (
            b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks)
            + b"data: [DONE]\n\n"
        )
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads what the model was asked, not the server's log."""


def test_dsh_record_re_records_against_the_live_route_then_replays(
    goldened: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        route = (
            f"{{id: local, base_url: 'http://127.0.0.1:{server.server_address[1]}', api_key_env: SHOP_KEY, "
            "models: [shop-model]}"
        )
        deployment = goldened / "agent.yml"
        deployment.write_text(
            "provider: local\nmodel: shop-model\n"
            + deployment.read_text().replace(
                "{id: llm-openai, use: llm_openai}",
                f"{{id: llm-openai, use: llm_openai, config: {{providers: [{route}]}}}}",
            )
        )
        skipped = run(pytester, "--dsh-record", "-rs", "scenarios/price")
        skipped.assert_outcomes(skipped=1)
        skipped.stdout.fnmatch_lines(
            ["*--dsh-record: route local needs its key in SHOP_KEY, which is not set*"]
        )
        monkeypatch.setenv("SHOP_KEY", "a-test-key")
        recorded = run(pytester, "--dsh-record", "--snapshot-update", "scenarios/price")
        recorded.assert_outcomes(passed=1)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert _Model.requests == [{"path": "/chat/completions", "authorization": "Bearer a-test-key"}]
    log = (goldened / "scenarios" / "price" / "session.jsonl").read_text()
    assert "3 coins, live." in log
    assert "a-test-key" not in log
    monkeypatch.delenv("SHOP_KEY")
    run(pytester, "scenarios/price").assert_outcomes(passed=1)  # the new recording replays with no key


def test_scenario_roots_from_the_command_line_join_the_collection(
    goldened: Path, pytester: pytest.Pytester
) -> None:
    (goldened / "pytest.ini").write_text("[pytest]\npythonpath = .\ntestpaths = tests\n")
    (goldened / "tests").mkdir()
    (goldened / "tests" / "test_nothing.py").write_text("def test_ok():\n    pass\n")
    run(pytester).assert_outcomes(passed=1)  # inert: no root named
    run(pytester, "--dsh-scenarios", "scenarios").assert_outcomes(passed=3)
    bad = run(pytester, "--dsh-scenarios", "nowhere")
    bad.stderr.fnmatch_lines(["*--dsh-scenarios: 'nowhere' is not a directory*"])
    without = run(pytester, "-p", "no:syrupy", "--dsh-scenarios", "scenarios")
    without.stderr.fnmatch_lines(["*dsh's scenario goldens are syrupy snapshots: install syrupy*"])


def test_hand_written_tests_use_the_fixtures(goldened: Path, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_shop="""
        def test_the_recording_says_what_the_tool_returned(dsh_replay):
            result = dsh_replay("scenarios/price")
            assert result.divergence is None
            assert [(c.name, c.arguments, c.result) for c in result.tool_calls] == [
                ("price", {"item": "apple"}, "apple costs 3 coins")
            ]
            assert result.text == "An apple costs 3 coins."
            assert "apple costs 3 coins" in result.view
            assert [e.type for e in result.events[:2]] == ["agent/inbox/spliced", "turn/start"]

        def test_a_model_written_in_the_test(dsh_author, dsh_replay):
            scenario = dsh_author(
                ["What does a pear cost?"],
                [{"tool_calls": [{"name": "price", "arguments": {"item": "pear"}}]}, {"text": "Five."}],
                deployment="agent.yml",
            )
            result = dsh_replay(scenario)
            assert result.divergence is None
            assert [c.result for c in result.tool_calls] == ["pear costs 5 coins"]
            assert result.text == "Five."

        def test_a_temporary_store(dsh_store):
            assert dsh_store.sessions() == []
        """
    )
    run(pytester, "test_shop.py").assert_outcomes(passed=3)


def test_the_original_recordings_are_collected_by_the_plugin_and_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(syrupy, "_syrupy", syrupy._syrupy)
    shutil.copytree(FIXTURES / "harness", pytester.path / "harness")
    pytester.makeini("[pytest]\ndsh_scenarios = harness\n")
    result = run(pytester, "-q")
    result.assert_outcomes(passed=len(list((FIXTURES / "harness").glob("*/scenario.yml"))))
    result.stdout.fnmatch_lines(["*snapshots passed*"])
    assert "unused" not in result.stdout.str()


def test_the_plugin_imports_nothing_heavy_until_a_project_opts_in(tmp_path: Path) -> None:
    # every pytest run where dsh is installed loads the plugin: a project that names no scenario root (here an empty
    # one) pays for pytest, not for replaying scenarios (anyio is left out: its own pytest plugin imports it)
    code = (
        "import sys\nimport pytest\n"
        "code = pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:randomly', '-p', 'no:xdist'])\n"
        "heavy = ('msgspec', 'yaml', 'sqlite_utils', 'dsh.runtime.session', 'dsh.runtime.kernel.config', "
        "'dsh.replay.driver._rerun', 'dsh.replay.driver._scenario', 'dsh.replay.frontends._cli')\n"
        "assert 'dsh.replay.frontends._pytest_plugin' in sys.modules\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    (tmp_path / "test_nothing.py").write_text("def test_nothing() -> None:\n    pass\n", encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120
    )
    assert ran.stdout.strip().splitlines()[-1] == "[]"
