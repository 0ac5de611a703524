"""A minimal ACP agent for the provider's tests, on the standard library only: it answers `initialize` and
`session/new`, then behaves at `session/prompt` as its one argument says. Every message it reads is appended to
the file named by $FAKE_AGENT_LOG (one method per line, then `eof` at end of input), so a test can check what the
provider sent and in which order.

    narrate     says something, calls a tool, then answers: only the answer is the subagent's result
    environment answers with the variables DEEPSEEK_API_KEY, FAKE_AGENT_REPORT and NAMED it was given
    permission  asks permission for a tool call, answers with the option the client chose
    crash       exits with code 1 (a message on stderr) instead of answering the prompt
    stubborn    starts a grandchild (`sleep`), never answers, ignores end of input and SIGTERM
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

MODE = sys.argv[1]
LOG = os.environ.get("FAKE_AGENT_LOG")
SESSION = "fake-session-1"


def note(text: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def update(payload: dict[str, object]) -> None:
    send({"method": "session/update", "params": {"sessionId": SESSION, "update": payload}})


def chunk(text: str) -> None:
    update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def prompt(ident: object) -> None:
    if MODE == "narrate":
        chunk("Let me look ")
        chunk("at the files.")
        update({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls", "status": "in_progress"})
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
        chunk("There are ")
        chunk("3 files.")
        send({"id": ident, "result": {"stopReason": "end_turn"}})
    elif MODE == "environment":
        names = ("DEEPSEEK_API_KEY", "FAKE_AGENT_REPORT", "NAMED")
        chunk(" ".join(f"{name}={os.environ.get(name)}" for name in names))
        send({"id": ident, "result": {"stopReason": "end_turn"}})
    elif MODE == "permission":
        options = [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ]
        tool_call = {"toolCallId": "t1", "title": "rm -rf build"}
        send(
            {
                "id": "perm-1",
                "method": "session/request_permission",
                "params": {"sessionId": SESSION, "toolCall": tool_call, "options": options},
            }
        )
        answer = json.loads(sys.stdin.readline())
        outcome = answer["result"]["outcome"]
        chunk(f"permission: {outcome.get('optionId', outcome['outcome'])}")
        send({"id": ident, "result": {"stopReason": "end_turn"}})
    elif MODE == "crash":
        chunk("partial thoughts")
        sys.stderr.write("fake agent: out of cheese\n")
        sys.exit(1)
    elif MODE == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen(["sleep", "300"])
        note(f"grandchild {child.pid}")
        chunk("working")


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        note(str(method))
        if method == "initialize":
            send(
                {
                    "id": message["id"],
                    "result": {
                        "protocolVersion": 1,
                        "agentCapabilities": {},
                        "agentInfo": {"name": "fake", "version": "9"},
                    },
                }
            )
        elif method == "session/new":
            send({"id": message["id"], "result": {"sessionId": SESSION}})
        elif method == "session/prompt":
            prompt(message["id"])
    note("eof")
    if MODE == "stubborn":
        while True:
            time.sleep(1)


main()
