"""The supervisor's entry point, run as a script by `guard.guarded`: it loads `guard.py` beside it as a module, so
Python reads its cached bytecode instead of compiling the whole supervisor on every command (a script run directly
is compiled each time: about half the supervisor's start-up)."""

import os
import sys

__all__: list[str] = []

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    __import__("guard").main(sys.argv[1:])
