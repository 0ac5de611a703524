"""The `titles` plugin: after a session's first completed turn, a model call names the session (the original's
prompt; `session/title-llm-request`, then `session/title`)."""

from ._plugin import PURPOSE as PURPOSE
from ._plugin import TitlesConfig as TitlesConfig
from ._plugin import normalise_title as normalise_title
from ._plugin import plugin as plugin
from ._plugin import title_prompt as title_prompt

__all__ = ["PURPOSE", "TitlesConfig", "normalise_title", "plugin", "title_prompt"]
