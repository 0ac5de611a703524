"""LiteLLM's proxy (PyPI `litellm[proxy]`) on 127.0.0.1, serving the scripted models of `litellm_handler.py`.

The proxy lives in an environment of its own, `.test-servers/litellm` (made by `scripts/test-servers`, which
scripts/check and .ci/run call): its pins (`rich<14`, `websockets<16`) would otherwise hold back dsh's own
dependencies in the one lock. Tests that need it skip, saying how to install it, when it is missing.

`LiteLLMProxy.start()` writes a config (one model per scenario, `dshtest/<scenario>`, no retries or fallbacks of
the proxy's own, a master key), starts `litellm` in its own process group and waits, bounded, until
`/health/liveliness` answers; `stop()` ends it (SIGTERM, then SIGKILL), `kill()` at once (SIGKILL: the connection
drops mid-stream as a crashed server's does).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENT = ROOT / ".test-servers" / "litellm"
EXECUTABLE = ENVIRONMENT / "bin" / "litellm"
HANDLER = Path(__file__).with_name("litellm_handler.py")
MASTER_KEY = "sk-dshtest-4f0c2a9e7b13d58e6a0f9c21b7d4e8a3"
SCENARIOS = (
    "text",
    "reasoning",
    "tools",
    "parallel",
    "cached",
    "rate-limit",
    "auth",
    "server",
    "overflow",
    "flaky",
    "slow",
    "stall",
)
START_TIMEOUT = 600.0
"""Importing the proxy costs ~20 s of CPU; on a loaded 2-core machine its start has taken 100 s."""

MISSING = f"LiteLLM's proxy is not installed in {ENVIRONMENT}: run scripts/test-servers"


def available() -> bool:
    return EXECUTABLE.exists()


def _config() -> str:
    models = "\n".join(
        f"  - model_name: {name}\n    litellm_params:\n      model: dshtest/{name}" for name in SCENARIOS
    )
    return f"""model_list:
{models}
litellm_settings:
  num_retries: 0
  request_timeout: 120
  custom_provider_map:
    - {{"provider": "dshtest", "custom_handler": litellm_handler.handler}}
router_settings:
  num_retries: 0
  disable_cooldowns: true  # a failed scenario must not put its model in cooldown for the next test (a 429 dsh would retry)
general_settings:
  master_key: {MASTER_KEY}
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class LiteLLMProxy:
    directory: Path
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def log(self) -> Path:
        return self.directory / "proxy.log"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        shutil.copy(HANDLER, self.directory / HANDLER.name)
        config = self.directory / "config.yaml"
        config.write_text(_config())
        env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ} | {
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the price list from the internet
            "LITELLM_TELEMETRY": "False",
            "PYTHONPATH": str(self.directory),
            "NO_COLOR": "1",
        }
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [str(EXECUTABLE), "--config", str(config), "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=self.directory,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the LiteLLM proxy exited with {self.process.returncode}: {self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health/liveliness", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the LiteLLM proxy did not answer within {START_TIMEOUT:g} s: {self.tail()}")

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None
