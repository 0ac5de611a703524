"""The `dsh` command's public names."""

from .app import app as app
from .app import main as main

__all__ = ["app", "main"]
