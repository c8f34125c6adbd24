"""An upstream server's stderr, as log lines that name the server (`[github] token expired`).

Inherited as it was before, every upstream wrote into our stderr unlabelled, and `lazytools search` printed the
chatter of every server it started around its results. Through a pipe each line becomes an INFO record of the
`lazytools.upstream` logger: shown when serving (INFO by default), quiet in `search` and `surface` unless
`--log-level DEBUG` (or INFO) asks for it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TextIO

import anyio

__all__ = ["labelled_stderr"]

logger = logging.getLogger("lazytools.upstream")

_CHUNK = 65536
_MAX_LINE = 4096
"""Characters of one stderr line that are logged; the rest is cut (a server may print anything)."""


@asynccontextmanager
async def labelled_stderr(name: str) -> AsyncIterator[TextIO]:
    """A file to give an upstream process as its stderr; its lines are logged under `name` while the context is open."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    writer = os.fdopen(write_fd, "w")
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_log_lines, name, read_fd)
            try:
                yield writer
            finally:
                tg.cancel_scope.cancel()
    finally:
        writer.close()
        os.close(read_fd)


async def _log_lines(name: str, fd: int) -> None:
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
                logger.info("[%s] %s", name, text[:_MAX_LINE])
