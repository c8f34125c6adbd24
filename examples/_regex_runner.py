"""Runs regex matching in a short-lived child interpreter so a runaway pattern can be killed."""

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from . import _regex_ops
from ._common import MAX_RESULT_BYTES

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "MAX_CHILDREN", "child_place", "run_regex"]

# Python's `re` holds the GIL and cannot be interrupted, so patterns such as `a*a*a*b` on long
# input would freeze the whole server. A separate process is the only reliable way to stop one.
DEFAULT_TIMEOUT_SECONDS = 3.0
_OPS_SCRIPT = Path(_regex_ops.__file__)
# Each child may burn a core for the whole timeout: past two per core, cheap calls of every session would queue
# behind them (60 at once stalled others by seconds). A call that finds no place within a second is refused.
MAX_CHILDREN = 2 * (os.cpu_count() or 1)
_CHILD_WAIT_SECONDS = 1.0
_children = threading.BoundedSemaphore(MAX_CHILDREN)


@contextmanager
def child_place() -> Iterator[None]:
    """One of the MAX_CHILDREN places, held for the block; ValueError when none frees within a second. A caller
    that reads its input first (search_in_files: up to 50 MB of files) takes it before reading, so that only calls
    sure to run hold their input, and a call refused has read nothing."""
    if not _children.acquire(timeout=_CHILD_WAIT_SECONDS):
        raise ValueError(f"{MAX_CHILDREN} regular expressions are already being evaluated; try again shortly")
    try:
        yield
    finally:
        _children.release()


def run_regex(request: dict[str, Any], timeout: float | None = None, blobs: list[bytes] | None = None, *,
              place_held: bool = False) -> dict[str, Any]:
    """Execute one regex operation in a child process; raise ValueError on timeout, failure or a too-large result.

    The request holds "op" (search, match, fullmatch, finditer, subn, split, grep), "pattern",
    "flags" (an int) and the operation's inputs; "grep" searches `blobs` (file contents already read by the
    caller). The pattern must already compile in the parent. The child stops any result over MAX_RESULT_BYTES.
    `place_held`: the caller already holds a `child_place()`.
    """
    limit = DEFAULT_TIMEOUT_SECONDS if timeout is None else timeout
    blobs = blobs or []
    request = {**request, "max_bytes": MAX_RESULT_BYTES, "sizes": [len(b) for b in blobs]}
    if not sys.executable or not _OPS_SCRIPT.is_file():
        # No interpreter to spawn (embedded/frozen installs): run in-process, unprotected.
        request.pop("sizes")
        result = _regex_ops.run(request, blobs)
    else:
        # ASCII-only JSON keeps the pipe independent of the locale; the file contents follow as raw bytes.
        payload = json.dumps(request).encode("ascii") + b"\n" + b"".join(blobs)
        with nullcontext() if place_held else child_place():
            try:
                # -I keeps the script's folder off sys.path (its modules must not shadow the stdlib); -S skips site.
                proc = subprocess.run(
                    [sys.executable, "-I", "-S", str(_OPS_SCRIPT)],
                    input=payload,
                    capture_output=True,
                    timeout=limit,
                )
            except subprocess.TimeoutExpired:
                raise ValueError(
                    f"the regular expression took longer than {limit:g}s and was stopped; simplify the pattern "
                    "(avoid overlapping repeats such as .*.* or (a|a)*) or shorten the text"
                ) from None
        if proc.returncode != 0:
            last = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            if "MemoryError" in last[0]:
                raise ValueError("the regular expression used too much memory and was stopped") from None
            raise ValueError(f"regex evaluation failed: {last[0][:300]}")
        result = json.loads(proc.stdout)
    if "error" in result:
        raise ValueError(result["error"])
    return result
