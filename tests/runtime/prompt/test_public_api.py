"""`dsh.runtime.prompt.__all__` is honest: it names exactly the public names the package defines, and each exists."""

from __future__ import annotations

import dsh.runtime.prompt
from dsh.runtime.kernel.errors import PromptRenderError as KernelPromptRenderError


def test_all_lists_exactly_the_public_names() -> None:
    public = {name for name in vars(dsh.runtime.prompt) if not name.startswith("_")}
    assert set(dsh.runtime.prompt.__all__) == public
    assert len(dsh.runtime.prompt.__all__) == len(set(dsh.runtime.prompt.__all__))


def test_the_names_other_packages_rely_on() -> None:
    for name in (
        "render_prompt",
        "interpolate",
        "PromptRenderError",
        "IDENTITY",
        "SystemPrompt",
        "PromptSection",
        "PromptAssembly",
        "AssembleContext",
        "SYSTEM_PROMPT",
        "ASSEMBLE",
        "plugin",
        "render_context_snapshot",
    ):
        assert name in dsh.runtime.prompt.__all__, name
    assert dsh.runtime.prompt.PromptRenderError is KernelPromptRenderError
    assert dsh.runtime.prompt.ASSEMBLE.name == "system-prompt/assemble"
    assert dsh.runtime.prompt.CHANGE.name == "system-prompt/change"
