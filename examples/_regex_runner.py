"""Runs regex matching in a short-lived child interpreter so a runaway pattern can be killed."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from . import _regex_ops

__all__ = ["run_regex", "DEFAULT_TIMEOUT_SECONDS"]

# Python's `re` holds the GIL and cannot be interrupted, so patterns such as `a*a*a*b` on long
# input would freeze the whole server. A separate process is the only reliable way to stop one.
DEFAULT_TIMEOUT_SECONDS = 3.0
_OPS_SCRIPT = Path(_regex_ops.__file__)


def run_regex(request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    """Execute one regex operation in a child process; raise ValueError on timeout or failure.

    The request holds "op" (search, match, fullmatch, finditer, subn, split, grep), "pattern",
    "flags" (an int) and the operation's inputs. The pattern must already compile in the parent.
    """
    limit = DEFAULT_TIMEOUT_SECONDS if timeout is None else timeout
    if not sys.executable or not _OPS_SCRIPT.is_file():
        # No interpreter to spawn (embedded/frozen installs): run in-process, unprotected.
        result = _regex_ops.run(request)
    else:
        try:
            # -I keeps the script's folder off sys.path (its modules must not shadow the stdlib); -S skips site.
            proc = subprocess.run(
                [sys.executable, "-I", "-S", str(_OPS_SCRIPT)],
                input=json.dumps(request),  # ASCII-only JSON keeps the pipe independent of the locale
                capture_output=True,
                text=True,
                timeout=limit,
            )
        except subprocess.TimeoutExpired:
            raise ValueError(
                f"the regular expression took longer than {limit:g}s and was stopped; simplify the pattern "
                "(avoid overlapping repeats such as .*.* or (a|a)*) or shorten the text"
            ) from None
        if proc.returncode != 0:
            last = proc.stderr.strip().splitlines()[-1:] or ["no output"]
            raise ValueError(f"regex evaluation failed: {last[0]}")
        result = json.loads(proc.stdout)
    if "error" in result:
        raise ValueError(result["error"])
    return result
