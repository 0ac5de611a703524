"""Secrets never reach a tool: a model that runs `env` and echoes the key variables through bash, in a real `dsh run`
against a loopback model server, gets none of them, so they are absent from the log, the export and the next
request, nor any secret in disguise (a value containing the key, a URL's password, a proxy's credentials, dsh's own
`DSH_STORE`). The key itself was live all along: it is in the Authorization header, and only there."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.plugins.llm_openai.loopback import loopback
from tests.runtime.cli.helpers import DSH, answer, bash_call

from .agent_run import deployment, environment, run_command

pytestmark = pytest.mark.anyio

SECRETS = {
    "DSH_TEST_PROVIDER_CRED": "sk-route-key-7f3a9c",  # the route's key: no credential pattern matches the name
    "DEEPSEEK_API_KEY": "sk-deepseek-key-51d0e2",  # withheld by the *_API_KEY pattern
    "DATABASE_URL": "postgres://app:db-pass-93be41@db/app",  # withheld by the deployment's deny list
    "ROUTE_KEY_COPY": "sk-route-key-7f3a9c",  # the route key's value under an innocent name
    # secrets in disguise: inside another value, by a name no older pattern knew, by the shape of the value
    "AUTH_HEADER": "Bearer sk-route-key-7f3a9c",
    "MYSQL_PWD": "mysql-pass-0c4d2e",
    "GITHUB_PAT": "pat-value-6e1f0a9b",
    "SENTRY_DSN": "https://sentry-key-3a9f1c@o1.ingest.sentry.io/42",
    "CI_JOB_JWT": "jwt-value-8d7c6b5a",
    "HTTPS_PROXY": "http://proxy-user:proxy-pass-2b7e@127.0.0.1:9",
    "APP_DB": "postgres://app:app-db-pass-41c9@db/app",
    "APP_DB_COPY": "app-db-pass-41c9",
    "DSH_STORE": "postgresql://dsh:store-pass-5e1d@127.0.0.1:9/dsh",  # dsh's own setting (--store overrides it)
}
ATTACK = 'env; echo "route=$DSH_TEST_PROVIDER_CRED deepseek=$DEEPSEEK_API_KEY db=$DATABASE_URL"'


async def test_env_and_echo_in_bash_show_no_secret_anywhere(tmp_path: Path) -> None:
    async with loopback(bash_call(ATTACK), answer("nothing to see")) as server:
        config = tmp_path / "deployment.yml"
        config.write_text(
            deployment(
                server.base_url, key_env="DSH_TEST_PROVIDER_CRED", bash={"env": {"deny": ["DATABASE_URL"]}}
            )
        )
        store = tmp_path / "sessions.db"
        env = environment(**SECRETS, VISIBLE_TO_TOOLS="plain-value-0042")
        ran = await anyio.run_process(run_command(config, store, tmp_path), env=env, check=False)
        assert ran.returncode == 0, ran.stderr.decode()
        session = ran.stderr.decode().split("session ")[-1].strip()
        export = await anyio.run_process(
            [*DSH, "sessions", "export", session, "--store", str(store)], env=env
        )
    second = server.requests[1]
    tool_output = second.json()["messages"][-1]["content"]
    assert "VISIBLE_TO_TOOLS=plain-value-0042" in tool_output  # `env` ran, and ordinary variables pass
    assert "route= deepseek= db=" in tool_output
    assert second.headers["authorization"] == "Bearer sk-route-key-7f3a9c"  # the key was live, in its header
    exported = export.stdout.decode()
    assert "plain-value-0042" in exported
    stored = b"".join([await path.read_bytes() async for path in anyio.Path(tmp_path).glob("sessions.db*")])
    for value in SECRETS.values():
        assert value not in tool_output
        assert value.encode() not in second.body
        assert value not in exported
        assert value.encode() not in stored
        assert value not in ran.stdout.decode()
