"""Log lines written to stderr by a thread of their own, so that a stderr no one reads never stops the server.

A client that starts lazytools with its stderr on a pipe and reads it slowly, or not at all (a common client bug),
fills the pipe's buffer (64 KiB on Linux); from then on each write to stderr blocks until the client reads. Written
by the event loop, one log line (an upstream's stderr relayed, a warning) stopped every session and `/healthz` for
as long as the client did not read: measured with an upstream writing 100 KB to its stderr. Here the loop only
puts each record on a bounded queue, and a thread writes them; when the queue is full (the writer is blocked), new
records are dropped and counted, and a line saying how many were lost is written once the writer moves again. At
exit what is waiting is written for as long as the writer moves; a stderr that no one reads does not keep the
process from exiting.
"""

from __future__ import annotations

import atexit
import logging
import logging.handlers
import os
import queue
import sys
import threading
from contextlib import suppress

__all__ = ["EXIT_WAIT", "MAX_WAITING", "QueuedStderr", "queued_stderr"]

MAX_WAITING = 10_000
"""Records held for a blocked stderr before new ones are dropped (each record is one line: a few hundred bytes)."""


class QueuedStderr(logging.handlers.QueueHandler):
    """Puts each record on a bounded queue (`queue.put_nowait`): a record that does not fit is dropped and counted,
    and the count goes out as a line of its own before the next record that fits."""

    def __init__(self, waiting: queue.Queue[logging.LogRecord | None]) -> None:
        super().__init__(waiting)
        self.dropped = 0

    def enqueue(self, record: logging.LogRecord) -> None:
        # Called with the handler's lock held (`Handler.handle`), so `dropped` is counted by one thread at a time.
        try:
            if self.dropped:
                self.queue.put_nowait(self.dropped_line())
                self.dropped = 0
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def dropped_line(self) -> logging.LogRecord:
        """The line saying how many records were dropped."""
        return logging.LogRecord(__name__, logging.WARNING, __file__, 0,
                                 "%d log lines were dropped: they came faster than stderr took them", (self.dropped,),
                                 None)


EXIT_WAIT = 1.0
"""At exit, the records still queued are waited for as long as the writer gets through some every this many
seconds: a stderr that no one reads must not keep the process from exiting (what is still queued then is lost)."""


def queued_stderr(formatter: logging.Formatter, *, most: int = MAX_WAITING) -> QueuedStderr:
    """A handler for the root logger whose records a daemon thread writes to stderr with `formatter`; at exit what
    is waiting is written for as long as the writer moves (EXIT_WAIT).

    The thread writes to a file descriptor of its own (a duplicate of stderr's) with `os.write`, and no
    `logging.Handler` does the writing: a writer blocked in a full pipe then holds no lock that exit needs
    (`logging.shutdown` takes every handler's lock, and the interpreter flushes `sys.stderr` through its buffer's
    lock), so the process still exits."""
    waiting: queue.Queue[logging.LogRecord | None] = queue.Queue(most)
    encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    try:
        fd: int | None = os.dup(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):  # no stderr to write to (closed, or not a file)
        fd = None

    def write() -> None:
        while (record := waiting.get()) is not None:
            if fd is None:
                continue
            data = memoryview((formatter.format(record) + "\n").encode(encoding, "backslashreplace"))
            try:
                while data:
                    data = data[os.write(fd, data):]
            except OSError:  # a closed pipe: the line is lost, the server goes on
                pass

    thread = threading.Thread(target=write, name="lazytools-log", daemon=True)
    thread.start()
    handler = QueuedStderr(waiting)

    def stop() -> None:
        last = [handler.dropped_line()] if handler.dropped else []  # said with the next record: at exit there is none
        for record in [*last, None]:
            with suppress(queue.Full):  # a full queue: the writer is blocked, and its thread ends with the process
                waiting.put_nowait(record)
        left = waiting.qsize() + 1
        while thread.is_alive() and waiting.qsize() < left:  # waited for as long as the writer moves
            left = waiting.qsize()
            thread.join(EXIT_WAIT)

    atexit.register(stop)
    return handler
