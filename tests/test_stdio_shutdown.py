"""How a stdio session ends when it is cut short: semantic indexing under way, a client that goes away without a
word, a signal while a large answer is being read. Each exits with its usual status and nothing torn or dumped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .test_stdio_faults import INIT

pytestmark = pytest.mark.process  # every test here starts lazytools (and an upstream) as a child process

HOSTILE = Path(__file__).resolve().parent / "upstreams" / "hostile.py"


@contextmanager
def _lazytools(tmp_path: Path, *flags: str) -> Iterator[subprocess.Popen[bytes]]:
    with subprocess.Popen([sys.executable, "-m", "lazytools", "--no-learn", "--cache-dir", str(tmp_path / "cache"),
                           "--log-level", "INFO", *flags], cwd=tmp_path, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        watchdog = threading.Timer(120, proc.kill)  # a hung server fails the test instead of hanging it
        watchdog.start()
        try:
            yield proc
        finally:
            watchdog.cancel()
            proc.kill()


def _stderr_until(proc: subprocess.Popen[bytes], marker: bytes) -> bytes:
    assert proc.stderr is not None
    seen = b""
    while marker not in seen:
        line = proc.stderr.readline()
        assert line, f"no {marker!r} on stderr: {seen[-2000:]!r}"
        seen += line
    return seen


def _gateway(tmp_path: Path) -> str:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"h": {"command": sys.executable, "args": [str(HOSTILE)]}}}))
    return str(config)


def _big_call(ident: int, size: int) -> bytes:
    call = {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
            "params": {"name": "invoke_tool", "arguments": {"tool_name": "h__big", "arguments": {"size": size}}}}
    return json.dumps(call).encode() + b"\n"


def _handshake() -> bytes:
    return b"".join(json.dumps(message).encode() + b"\n" for message in INIT)


@pytest.mark.parametrize(("how", "status"), [("end of input", 0), ("SIGTERM", 143), ("SIGINT", 130)])
def test_semantic_indexing_under_way_ends_with_the_usual_status(tmp_path: Path, how: str, status: int) -> None:
    """A cold vector cache: the catalog is being embedded (onnxruntime, in a thread) when the session ends. An
    interpreter leaving while that thread is inside the model aborted (SIGABRT)."""
    pytest.importorskip("onnxruntime")
    with _lazytools(tmp_path, "--semantic") as proc:
        assert proc.stdin is not None and proc.stderr is not None
        seen = _stderr_until(proc, b"semantic search: WordLlama")  # the models are loaded: embedding starts
        if how == "end of input":
            proc.stdin.close()
        else:
            proc.send_signal(signal.SIGINT if how == "SIGINT" else signal.SIGTERM)
        seen += proc.stderr.read()
        assert proc.wait(timeout=60) == status, seen[-3000:]
        assert b"Traceback" not in seen and b"terminate called" not in seen
        # Stopped between two batches (106 tools take seconds on a CPU), the thread joined before the exit:
        assert b"semantic indexing stopped" in seen


@pytest.mark.parametrize("closes", ["stdout", "stdin and stdout"])
def test_a_client_that_goes_away_ends_the_session_quietly(tmp_path: Path, closes: str) -> None:
    """The client dies with calls running: their answers meet a closed pipe. That is the end of the session (exit
    0, as after end of input), not a traceback; a client that closed only stdout cannot read, so it ends too."""
    with _lazytools(tmp_path, "--config", _gateway(tmp_path), "--mode", "proxy") as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(_handshake())
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.stdout.close()
        proc.stdin.write(b"".join(_big_call(ident, 200_000) for ident in range(2, 7)))
        proc.stdin.flush()
        if closes != "stdout":
            proc.stdin.close()
        err = proc.stderr.read()  # to its end: the server has exited (the upstream's stderr is its own)
        assert proc.wait(timeout=60) == 0, err[-3000:]
        assert b"Traceback" not in err and b"BrokenPipeError" not in err
        assert b"the client closed stdout" in err


def test_sigterm_finishes_the_message_being_read(tmp_path: Path) -> None:
    """SIGTERM while a client reads a large answer: it gets the rest of that answer, never a torn JSON line."""
    size = 2_000_000
    with _lazytools(tmp_path, "--config", _gateway(tmp_path), "--mode", "proxy") as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(_handshake() + b"".join(_big_call(ident, size) for ident in range(2, 5)))
        proc.stdin.flush()
        fd = proc.stdout.fileno()
        data = b""
        while data.count(b"\n") < 1 or len(data) < 200_000:  # into the first big answer: the pipe is full behind it
            chunk = os.read(fd, 65536)
            assert chunk, proc.stderr.read()[-3000:]
            data += chunk
        proc.send_signal(signal.SIGTERM)
        _stderr_until(proc, b"received SIGTERM")  # the stop has begun while the answer is half read
        while chunk := os.read(fd, 1 << 20):
            data += chunk
        assert proc.wait(timeout=60) == 143  # 128 + SIGTERM
        torn = data.rsplit(b"\n", 1)[-1]
        assert not torn, f"torn: the last line has {len(torn)} bytes"
        answers = [json.loads(line) for line in data.splitlines()]
        assert answers[0]["id"] == 1 and len(answers) >= 2
        assert all(len(answer["result"]["content"][0]["text"]) >= size for answer in answers[1:])
