"""`dsh web`: a store's sessions in a browser (the `dsh.commands` entry point `web`)."""

from ._app import PAGE_SIZE as PAGE_SIZE
from ._app import create_app as create_app
from ._app import csrf_token as csrf_token
from ._app import sse_message as sse_message
from ._chat import Chat as Chat
from ._chat import ChatError as ChatError
from ._command import web_command as web_command
from ._security import CSP as CSP
from ._security import new_token as new_token

__all__ = [
    "CSP",
    "PAGE_SIZE",
    "Chat",
    "ChatError",
    "create_app",
    "csrf_token",
    "new_token",
    "sse_message",
    "web_command",
]
