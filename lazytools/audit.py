"""The audit trail: one JSON line per tool call, prompt and resource read, written off the event loop.

A line says when, who (the principal), which session, what (tool, prompt or URI), which upstream served it, how it
ended and why (`reason`, from a fixed vocabulary: REASONS) and how long it took, and the arguments' size and SHA-256 (of their compact, key-sorted JSON); the values
themselves only when `audit_arguments` is set, since arguments carry secrets and personal data. A writer thread
serializes, hashes and writes, so a large argument or a slow disk never stalls a session.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from .errors import ConfigError
from .identity import Principal
from .safetext import json_text

__all__ = ["REASONS", "AuditEvent", "AuditLog", "note_reason", "noting_reasons", "open_audit", "reason_of"]

logger = logging.getLogger(__name__)

_STDOUT_NAMES = frozenset({"stdout", "-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})
_BACKLOG = 10_000
"""Lines waiting for the writer at most; past it a call waits for the disk rather than a line being lost."""

REASONS = {
    "ok": "served",
    "tool_error": "the tool ran and answered with an error (isError)",
    "denied": "the policy refused it: a tool, prompt or resource the principal may not use, or arguments it refuses",
    "rate_limited": "the principal's calls per minute were used up",
    "unknown_tool": "no such tool in the catalog",
    "not_enabled": "a catalog tool called directly before search_tools enabled it in this session",
    "unknown_prompt": "no upstream serves this prompt",
    "unknown_resource": "no upstream serves this resource",
    "invalid_arguments": "the arguments do not match the tool's input schema",
    "invalid_request": "malformed params, or a session that is gone",
    "upstream_unavailable": "the upstream server is not connected (failed to start, crashed, reconnecting)",
    "timeout": "the upstream server did not answer within the call timeout",
    "upstream_error": "the upstream server failed the request",
    "state_unavailable": "the shared session store (Redis) did not answer",
    "cancelled": "the client cancelled it or went away",
    "internal_error": "a failure inside lazytools",
}
"""Every value of an audit line's `reason` (docs/team.md lists them): one word an operator can filter on."""

_REASON_OF = (
    ("PolicyRefusedError", "denied"), ("RateLimitedError", "rate_limited"), ("ToolNotEnabledError", "not_enabled"),
    ("UnknownToolError", "unknown_tool"), ("UnknownPromptError", "unknown_prompt"),
    ("UnknownResourceError", "unknown_resource"), ("ToolArgumentsError", "invalid_arguments"),
    ("UpstreamTimeoutError", "timeout"), ("UpstreamUnavailableError", "upstream_unavailable"),
    ("UpstreamError", "upstream_error"), ("ToolExecutionError", "tool_error"),
    ("StateUnavailableError", "state_unavailable"),
)
"""lazytools' errors (errors.py) by class name, most specific first, and the reason each means."""

_noted: ContextVar[list[str] | None] = ContextVar("lazytools_audit_reason", default=None)


def reason_of(exc: BaseException) -> str:
    """The reason an error of lazytools' means (`internal_error` for anything else)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return next((reason for name, reason in _REASON_OF if name in names), "internal_error")


def note_reason(reason: str) -> None:
    """Say why the request being audited ends as it does, where that is known (an error converted to an isError
    result or a JSON-RPC error loses its class). The first note wins: a tool hidden by the policy is refused as
    `denied` before it reads as an unknown tool."""
    assert reason in REASONS, reason
    holder = _noted.get()
    if holder is not None and not holder:
        holder.append(reason)


@contextmanager
def noting_reasons() -> Iterator[list[str]]:
    """Collects the reason noted while the block runs (a list, so that a note made in a copied context counts)."""
    holder: list[str] = []
    token = _noted.set(holder)
    try:
        yield holder
    finally:
        _noted.reset(token)


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One audited request, as the server saw it."""

    method: str
    """tools/call, invoke_tool, prompts/get or resources/read."""
    target: str | None
    """The tool or prompt name, or the resource URI."""
    principal: Principal | None
    session: str | None
    upstream: str | None
    outcome: str
    """ok, error (an isError result or a protocol error), invalid (malformed params) or cancelled."""
    duration_ms: float
    arguments: Any
    started: float
    """Wall-clock time (seconds since the epoch) the request came in."""
    error: str | None = None
    reason: str | None = None
    """Why it ended so: one of REASONS (None: decided from `outcome` when written)."""


class AuditLog:
    """Writes events as JSON lines to `sink` (stderr or a file opened for appending)."""

    def __init__(self, sink: TextIO, *, values: bool = False, owns_sink: bool = False) -> None:
        self.sink = sink
        self.values = values
        self._owns = owns_sink
        self._queue: queue.Queue[AuditEvent | None] = queue.Queue(maxsize=_BACKLOG)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def record(self, event: AuditEvent) -> None:
        """Queue `event` for writing (returns at once unless thousands of lines are waiting)."""
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._write_all, name="lazytools-audit", daemon=True)
                    self._thread.start()
        self._queue.put(event)

    def drain(self) -> None:
        """Block until every event recorded so far is written (tests; shutdown)."""
        self._queue.join()

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._owns:
            self.sink.close()

    def line(self, event: AuditEvent) -> str:
        """The JSON line of `event` (without the newline)."""
        principal = event.principal
        record: dict[str, Any] = {
            "time": datetime.fromtimestamp(event.started, UTC).isoformat(timespec="milliseconds"),
            "principal": principal.name if principal is not None else None,
            "principal_id": principal.key if principal is not None else None,
            "session": event.session,
            "method": event.method,
            "target": event.target,
            "upstream": event.upstream,
            "outcome": event.outcome,
            "reason": event.reason or ("ok" if event.outcome == "ok" else "cancelled" if event.outcome == "cancelled"
                                       else "invalid_request" if event.outcome == "invalid" else "internal_error"),
            "duration_ms": round(event.duration_ms, 3),
        }
        if event.error is not None:
            record["error"] = event.error
        encoded = json.dumps(event.arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                             default=str).encode()
        record["argument_bytes"] = len(encoded) if event.arguments is not None else 0
        record["argument_sha256"] = hashlib.sha256(encoded).hexdigest() if event.arguments is not None else None
        if self.values:
            record["arguments"] = event.arguments
        # Direction overrides, zero-width and line-separating characters of a name or value as JSON escapes.
        return json_text(json.dumps(record, ensure_ascii=False, default=str))

    def _write_all(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is None:
                    return
                try:
                    self.sink.write(self.line(event) + "\n")
                    self.sink.flush()
                except (OSError, ValueError, RecursionError) as exc:
                    logger.error("audit line not written: %s", exc)
            finally:
                self._queue.task_done()


def open_audit(setting: str, *, values: bool = False) -> AuditLog | None:
    """The audit log `LAZYTOOLS_AUDIT` names: None for off, stderr, or a file appended to. Never stdout: on stdio
    it carries the protocol, and elsewhere a log mixed into it is lost anyway."""
    where = setting.strip()
    if where.lower() in ("", "off", "false", "no", "0"):
        return None
    if where.lower() == "stderr":
        return AuditLog(sys.stderr, values=values)
    if where.lower() in _STDOUT_NAMES:
        raise ConfigError(f"LAZYTOOLS_AUDIT={where}: stdout carries the MCP protocol; use stderr or a file")
    path = Path(where).expanduser()
    try:
        sink = path.open("a", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"LAZYTOOLS_AUDIT={where}: cannot open for appending ({exc.strerror})") from None
    if _is_stdout(sink.fileno()):
        sink.close()
        raise ConfigError(f"LAZYTOOLS_AUDIT={where}: that is stdout, which carries the MCP protocol; use stderr or "
                          "a file")
    return AuditLog(sink, values=values, owns_sink=True)


def _is_stdout(fd: int) -> bool:
    """Whether `fd` writes where stdout does, however the path was spelled (`/dev/./stdout`, `/proc/<pid>/fd/1`, a
    link to either): the names above cannot list every alias, the opened file can be compared. A terminal or
    /dev/null shared with stdout is no protocol stream, so character devices are left alone."""
    try:
        mine, out = os.fstat(fd), os.fstat(1)
    except OSError:  # no stdout at all
        return False
    return (mine.st_dev, mine.st_ino) == (out.st_dev, out.st_ino) and not stat.S_ISCHR(mine.st_mode)
