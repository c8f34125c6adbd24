"""`lazytools` started from a terminal: it says what it waits for, and Ctrl-C or SIGTERM stop it at once.

The process gets a pseudo-terminal as stdin (as in a shell) and nothing is typed: before, the SDK's reader thread
sat in read() and the process logged "shutting down" but lived on until Ctrl-D.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
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
            assert "waiting for an MCP client" in told
            # Lines that run as printed: the command as started (not a bare `lazytools`, which the README's
            # install leaves off PATH), and the Inspector with -y and `--` before lazytools' own arguments.
            command = f"{sys.executable} -m lazytools"
            assert f"  {command} search \"convert a temperature\"\n" in told, told
            assert f"  npx -y @modelcontextprotocol/inspector --cli -- {command} --method tools/list\n" in told
            _wait_for_line(process.stderr, "serving")  # logged once the signals are lazytools' own
            process.send_signal(signum)
            code = process.wait(timeout=60)  # generous for a busy machine; before the fix it never came
            # Ctrl-C ends with the status of an interrupted command, as `lazytools search` and the example do.
            assert code == (130 if signum == signal.SIGINT else 143), process.stderr.read()
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


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_start_up_stops_lazytools_and_its_upstreams(tmp_path: Path, signum: signal.Signals) -> None:
    """Start-up waits for upstreams (npx downloads, slow servers) up to the connect timeout: a client that gives up
    then and signals must not leave lazytools, or the upstreams it started, running."""
    pid_file = tmp_path / "upstream.pid"
    never_answers = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(300)"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"slow": {"command": sys.executable, "args": ["-c", never_answers]}}}))
    with subprocess.Popen([sys.executable, "-m", "lazytools", "--config", str(config), "--connect-timeout", "120"],
                          cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as process:
        try:
            for _ in range(600):  # the upstream has started (or lazytools died trying)
                if pid_file.exists() and pid_file.read_text() or process.poll() is not None:
                    break
                time.sleep(0.05)
            assert process.poll() is None and pid_file.read_text(), "the upstream never started"
            upstream = int(pid_file.read_text())
            process.send_signal(signum)
            _, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == (130 if signum == signal.SIGINT else 143), err[-2000:]
    assert "while starting" in err
    assert not _alive(upstream), "the upstream outlived lazytools"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as status:
            return "zombie" not in status.read()
    except FileNotFoundError:
        return False


_STALLED = r"""
import importlib.abc, sys, time

class Stall(importlib.abc.MetaPathFinder):
    '''Holds the first import of `module` for `seconds`: the second of imports at start-up, made long enough to
    be hit by the test's Ctrl-C at a known point.'''

    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            print("importing " + name, file=sys.stderr, flush=True)
            time.sleep({seconds})
        return None

sys.meta_path.insert(0, Stall())
sys.argv = ["lazytools"]
{entry}
"""
_ENTRIES = {
    # what `python -m lazytools` does
    "python -m": "import runpy; runpy.run_module('lazytools', run_name='__main__', alter_sys=True)",
    # what the `lazytools` command pip installs does, from the entry point pyproject declares
    "command": "from importlib.metadata import entry_points; (ep,) = entry_points(group='console_scripts', "
               "name='lazytools'); sys.exit(ep.load()())",
}


@pytest.mark.parametrize("entry", sorted(_ENTRIES))
@pytest.mark.parametrize(("module", "seconds"), [("pydantic", 60), ("mcp", 3)],
                         ids=["before-main", "in-the-event-loop"])
def test_ctrl_c_while_importing_exits_quietly_with_130(tmp_path: Path, entry: str, module: str,
                                                      seconds: int) -> None:
    """Before: a traceback, KeyboardInterrupt, and the process killed by SIGINT. `pydantic` is imported on the way
    to `cli.main` (Ctrl-C raises there at once); `mcp` inside the event loop, where asyncio's runner turns Ctrl-C
    into a cancellation once the import is done (hence a short stall)."""
    script = _STALLED.format(module=module, seconds=seconds, entry=_ENTRIES[entry])
    with subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stderr is not None
            _wait_for_line(process.stderr, f"importing {module}")
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert out == ""
