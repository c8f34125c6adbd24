"""`python -m lazytools` and the `lazytools` command (pyproject's entry point).

Importing the server takes about a second. A Ctrl-C in it ends the command quietly with 130, as the shell expects
of an interrupted command, instead of with a traceback; from `main` on, the CLI and the server handle signals.
"""

from __future__ import annotations

import sys

__all__ = ["run"]


def run() -> int:
    try:
        from .cli import main
    except KeyboardInterrupt:
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(run())
