"""An upstream server's stderr, as log lines that name the server (`[github] token expired`).

Inherited, every upstream would write into our stderr unlabelled, and `lazytools search` would print the chatter
of every server it started around its results. Through a pipe each line becomes an INFO record of the
`lazytools.upstream` logger: shown when serving (INFO by default), quiet in `search` and `surface` unless
`--log-level DEBUG` (or INFO) asks for it. The last lines are also kept (`StderrTail`), so that the warning for a
server that fails can say what it said ("Cannot connect to the Docker daemon") whatever the log level.
"""

from __future__ import annotations

import fcntl
import logging
import os
import struct
import termios
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TextIO

import anyio

from ...safetext import clip

__all__ = ["StderrTail", "labelled_stderr"]

logger = logging.getLogger("lazytools.upstream")

_CHUNK = 65536
_MAX_LINE = 4096
"""Characters of one stderr line that are logged; the rest is cut (a server may print anything)."""


_TAIL_LINES = 3
_TAIL_CHARS = 300
_SETTLE_SECONDS = 0.5
"""How long a failure waits for the pipe to be read empty: the server wrote its last words before it exited."""


class StderrTail:
    """The last lines an upstream wrote on stderr, for the warning when it fails."""

    def __init__(self) -> None:
        self.lines: deque[str] = deque(maxlen=_TAIL_LINES)
        self.fd: int | None = None  # the pipe's read end, while `labelled_stderr` reads it

    async def settled(self) -> str:
        """The last lines, once what the process wrote has been read (bounded); "" when it wrote nothing."""
        deadline = anyio.current_time() + _SETTLE_SECONDS
        while self.fd is not None and _unread(self.fd) and anyio.current_time() < deadline:
            await anyio.sleep(0.01)
        return " | ".join(self.lines)


def _unread(fd: int) -> int:
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
    except OSError:
        return 0


@asynccontextmanager
async def labelled_stderr(name: str, tail: StderrTail | None = None) -> AsyncIterator[TextIO]:
    """A file to give an upstream process as its stderr; its lines are logged under `name` (and the last ones kept
    in `tail`) while the context is open."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    writer = os.fdopen(write_fd, "w")
    tail = tail if tail is not None else StderrTail()
    tail.fd = read_fd
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_log_lines, name, read_fd, tail)
            try:
                yield writer
            finally:
                tg.cancel_scope.cancel()
    finally:
        tail.fd = None
        writer.close()
        os.close(read_fd)


async def _log_lines(name: str, fd: int, tail: StderrTail) -> None:
    pending = b""
    while True:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            continue
        if not chunk:  # every writer closed it; ours is open while the context is, so this is the end
            break
        *lines, pending = (pending + chunk).split(b"\n")
        if len(pending) > _MAX_LINE:
            lines.append(pending)
            pending = b""
        for line in lines:
            text = line.decode("utf-8", errors="replace").rstrip()
            if text:
                # Escaped as every logged name is: a server's terminal codes or bidi marks must not reach a terminal.
                logger.info("[%s] %s", name, clip(text, _MAX_LINE))
                tail.lines.append(clip(text, _TAIL_CHARS))
