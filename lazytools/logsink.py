"""Log lines written to stderr by a thread of their own, so that a stderr no one reads never stops the server.

A client that starts lazytools with its stderr on a pipe and reads it slowly, or not at all (a common client bug),
fills the pipe's buffer (64 KiB on Linux); from then on each write to stderr blocks until the client reads. Written
by the event loop, one log line (an upstream's stderr relayed, a warning) stopped every session and `/healthz` for
as long as the client did not read: measured with an upstream writing 100 KB to its stderr. Here the loop only
puts each record on a bounded queue, and a thread writes them; when the queue is full (the writer is blocked), new
records are dropped and counted, and a line saying how many were lost is written once the writer moves again. The
queue is drained when the process exits.
"""

from __future__ import annotations

import atexit
import logging
import logging.handlers
import queue
import sys

__all__ = ["MAX_WAITING", "QueuedStderr", "queued_stderr"]

MAX_WAITING = 10_000
"""Records held for a blocked stderr before new ones are dropped (each record is one line: a few hundred bytes)."""


class QueuedStderr(logging.handlers.QueueHandler):
    """Puts each record on a bounded queue (`queue.put_nowait`): a record that does not fit is dropped and counted,
    and the count goes out as a line of its own before the next record that fits."""

    def __init__(self, waiting: queue.Queue[logging.LogRecord]) -> None:
        super().__init__(waiting)
        self.dropped = 0

    def enqueue(self, record: logging.LogRecord) -> None:
        # Called with the handler's lock held (`Handler.handle`), so `dropped` is counted by one thread at a time.
        try:
            if self.dropped:
                self.queue.put_nowait(self._dropped_line())
                self.dropped = 0
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def _dropped_line(self) -> logging.LogRecord:
        """The line saying how many records were dropped."""
        return logging.LogRecord(__name__, logging.WARNING, __file__, 0,
                                 "%d log lines were dropped: stderr was not read as fast as they came", (self.dropped,),
                                 None)


def queued_stderr(formatter: logging.Formatter, *, most: int = MAX_WAITING) -> QueuedStderr:
    """A handler for the root logger whose records a thread writes to stderr with `formatter`; the thread is
    stopped (and what is waiting written) at exit."""
    waiting: queue.Queue[logging.LogRecord] = queue.Queue(most)
    writer = logging.StreamHandler(sys.stderr)
    writer.setFormatter(formatter)
    listener = logging.handlers.QueueListener(waiting, writer, respect_handler_level=False)
    listener.start()
    handler = QueuedStderr(waiting)

    def stop() -> None:
        if handler.dropped:  # the count is said with the next record that fits: at exit there is none
            waiting.put(handler._dropped_line())
        listener.stop()

    atexit.register(stop)
    return handler
