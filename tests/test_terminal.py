"""`lazytools` started from a terminal: it says what it waits for, and Ctrl-C or SIGTERM stop it at once.

The process gets a pseudo-terminal as stdin (as in a shell) and nothing is typed: before, the SDK's reader thread
sat in read() and the process logged "shutting down" but lived on until Ctrl-D.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process


def _wait_for_line(stream: object, needle: str) -> str:
    seen = ""
    for line in stream:  # type: ignore[attr-defined]
        seen += line
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} never came on stderr:\n{seen}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_stops_lazytools_waiting_on_a_terminal(tmp_path: Path, signum: signal.Signals) -> None:
    controller, terminal = os.openpty()
    with subprocess.Popen([sys.executable, "-m", "lazytools", "--files-root", str(tmp_path)], cwd=tmp_path,
                          stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        os.close(terminal)
        try:
            assert process.stderr is not None and process.stdout is not None
            told = _wait_for_line(process.stderr, "Ctrl-C stops it")
            assert "waiting for an MCP client" in told and "lazytools search" in told and "inspector" in told
            _wait_for_line(process.stderr, "serving")  # logged once the signals are lazytools' own
            process.send_signal(signum)
            code = process.wait(timeout=60)  # generous for a busy machine; before the fix it never came
            assert code == 0, process.stderr.read()
            assert process.stdout.read() == ""
        finally:
            if process.poll() is None:
                process.kill()
            os.close(controller)


def test_no_banner_when_stdin_is_not_a_terminal(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "lazytools", "--files-root", str(tmp_path)], cwd=tmp_path,
                          input="", capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout == ""
    assert "waiting for an MCP client" not in done.stderr
