"""The vocabulary of human-in-the-loop, as the original names it: approval policies and how each is stated to the
model, sandbox modes and their order, permission presets (a sandbox mode and a policy together), and the fold of a
session's log into its current policy, mode and preset."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dsh.runtime.session import (
    ApprovalPolicy,
    PermissionPreset,
    SandboxMode,
    StoredEvent,
)

__all__ = [
    "APPROVAL_CONTEXT",
    "POLICIES",
    "PRESETS",
    "SANDBOX_MODES",
    "KNOB_TYPES",
    "Knobs",
    "Preset",
    "fold_knobs",
    "policy_text",
    "wider",
]

APPROVAL_CONTEXT = "approval:policy"
"""The runtime-context section stating the session's approval policy (order 115, after `sandbox:policy`)."""

POLICIES = ("ask", "never", "auto-allow")
"""`ask`: a person answers each approval (no one to ask: it fails closed); `never`: every approval is rejected at
once and the model is told so up front; `auto-allow`: every approval is granted, nobody is asked."""

SANDBOX_MODES = ("read-only", "workspace-write", "danger-full-access")
"""The original's sandbox modes, narrowest first."""

_POLICY_TEXT = {
    "ask": (
        "Approval policy: ask. Operations that require approval may ask through the configured answerers; without "
        "an available answerer, the request fails closed."
    ),
    "never": (
        "Approval prompts are disabled in this session: actions that require approval are rejected automatically "
        "— do not request sandbox escalation (do not set `sandbox_permissions`)."
    ),
    "auto-allow": (
        "Approval policy: auto-allow. Operations that require approval are allowed automatically, without asking "
        "anyone."
    ),
}


def policy_text(policy: str) -> str:
    """How `policy` is stated to the model (`ask` and `never` in the original's words)."""
    return _POLICY_TEXT[policy]


def wider(mode: str, than: str) -> bool:
    """Whether sandbox mode `mode` allows more than `than`."""
    return SANDBOX_MODES.index(mode) > SANDBOX_MODES.index(than)


@dataclass(frozen=True)
class Preset:
    """A permission preset: the sandbox mode and approval policy it sets, and what it means, in one sentence."""

    sandbox: str
    approval: str
    description: str


PRESETS: dict[str, Preset] = {
    "read-only": Preset("read-only", "ask", "Read anywhere, write nowhere; anything wider asks first."),
    "workspace-write": Preset(
        "workspace-write",
        "ask",
        "Write inside the workspace and temporary directories; wider retries ask first.",
    ),
    "danger-full-access": Preset("danger-full-access", "never", "Full file access without approval prompts."),
}
"""The presets, by the original's names."""

KNOB_TYPES = (PermissionPreset.TAG, SandboxMode.TAG, ApprovalPolicy.TAG)


@dataclass(frozen=True)
class Knobs:
    """A session's last logged preset, sandbox mode and approval policy (None: never set in the log)."""

    preset: str | None = None
    sandbox: str | None = None
    policy: str | None = None


def fold_knobs(events: Iterable[StoredEvent]) -> Knobs:
    """The knobs the log's `permission/preset`, `sandbox/mode` and `approval/policy` events leave set."""
    preset = sandbox = policy = None
    for event in events:
        view = event.view()
        if isinstance(view, PermissionPreset):
            preset = view.data.preset
        elif isinstance(view, SandboxMode):
            sandbox = view.data.mode
        elif isinstance(view, ApprovalPolicy):
            policy = view.data.policy
    return Knobs(preset, sandbox, policy)
