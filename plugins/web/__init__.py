"""`dsh web`: a store's sessions in a browser (the `dsh.commands` entry point `web`)."""

from ._app import PAGE_SIZE as PAGE_SIZE
from ._app import create_app as create_app
from ._command import web_command as web_command
from ._security import CSP as CSP
from ._security import new_token as new_token

__all__ = ["CSP", "PAGE_SIZE", "create_app", "new_token", "web_command"]
