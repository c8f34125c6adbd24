"""The policy file, kept current without a restart: re-read when its size, time or inode change (checked at most
once a second), bounded in size, a regular file only (opened without blocking: a FIFO in its place is refused, not
waited on); a read that began before the one in force is never applied; an edit that does not parse or validate
keeps the last good policy, with an error in the log. A broken file at start-up stops the start (`ConfigError`).

A file rewritten in place can be read half written, and half a policy may parse (the rules that deny come later):
a change is applied only once the file has not been modified for `settle` seconds and two reads of it agree
(bytes, size, time, inode). Replacing the file atomically (write a new file, then rename it over the old one) is
still the way to edit it: docs/team.md."""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import time
import tomllib
from pathlib import Path

from pydantic import ValidationError

from ..errors import ConfigError
from .rules import Policy, PolicySpec

__all__ = ["PolicyFile"]

logger = logging.getLogger(__name__)

CHECK_EVERY = 1.0
"""Seconds between two looks at the file's metadata."""


_Stamp = tuple[int, int, int]


def _read_file(path: Path, max_bytes: int) -> tuple[bytes, _Stamp]:
    """The file's bytes and its (time, size, inode) as opened. Opened without blocking and checked on the opened
    descriptor: a FIFO, a device or a directory put (or linked) in its place is refused at once, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ConfigError(f"policy file {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"policy file {path} is not a regular file")
        if info.st_size > max_bytes:
            raise ConfigError(f"policy file {path} is larger than {max_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise ConfigError(f"policy file {path} is larger than {max_bytes} bytes")
    return b"".join(chunks), (info.st_mtime_ns, info.st_size, info.st_ino)


def _parse(path: Path, data: bytes) -> PolicySpec:
    """Parse and validate a policy file: JSON when its name ends in `.json`, TOML otherwise."""
    try:
        raw = json.loads(data) if path.suffix.lower() == ".json" else tomllib.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"policy file {path}: {exc}") from None
    try:
        return PolicySpec.model_validate(raw)
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:10])
        raise ConfigError(f"policy file {path}: {errors}") from None


class PolicyFile:
    """The policy in force, from one file."""

    def __init__(self, path: Path, *, max_bytes: int, settle: float = 1.0) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.settle = settle
        """Seconds a changed file must stay unmodified before it is read and applied."""
        data, self._stamp = _read_file(path, max_bytes)
        self.policy = Policy(_parse(path, data))
        self._checked = time.monotonic()
        self._failed: _Stamp | None = None
        self._lock = threading.Lock()
        self._reads = 0
        """Reads begun: each takes the next number (reads run in worker threads, several at once)."""
        self._applied = 0
        """The number of the newest read applied: an older read that ends later is dropped, never applied."""

    def _stat(self) -> _Stamp:
        info = os.stat(self.path)
        return (info.st_mtime_ns, info.st_size, info.st_ino)

    def due(self) -> bool:
        """Whether the next `current()` looks at the file (and may read it)."""
        return time.monotonic() - self._checked >= CHECK_EVERY

    def current(self) -> Policy:
        """The policy in force: re-read first if the file changed since the last look (and a second passed)."""
        now = time.monotonic()
        if now - self._checked < CHECK_EVERY:
            return self.policy
        self._checked = now
        try:
            stamp = self._stat()
        except OSError as exc:
            if self._failed is None:
                logger.error("policy file %s: %s; keeping the last good policy", self.path, exc)
                self._failed = (0, 0, 0)
            return self.policy
        if stamp != self._stamp and stamp != self._failed and self._settled(stamp):
            self.reload(stamp)
        return self.policy

    def _settled(self, stamp: _Stamp) -> bool:
        """Whether the file was last modified `settle` seconds ago or more (a writer may still be at it before);
        a time far from now either way (a copied file, another clock) counts as settled."""
        age = time.time() - stamp[0] / 1e9
        if abs(age) < self.settle:
            logger.debug("policy file %s changed %.2f s ago: applied once it settles", self.path, age)
            return False
        return True

    def reload(self, stamp: _Stamp | None = None) -> None:
        with self._lock:
            self._reads += 1
            number = self._reads
        try:
            data, stamp = _read_file(self.path, self.max_bytes)
            again, second = _read_file(self.path, self.max_bytes)
            if again != data or second != stamp:
                # Being written now: neither read is known complete. The next look (a second on) reads it again.
                logger.info("policy file %s changed while it was read; read again shortly", self.path)
                return
            spec = _parse(self.path, data)
        except (ConfigError, OSError) as exc:
            logger.error("%s; keeping the last good policy", exc)
            self._failed = stamp or (0, 0, 0)
            return
        with self._lock:
            if number < self._applied:
                logger.debug("policy file %s: a read older than the one in force ended; dropped", self.path)
                return
            self._applied = number
            self._stamp, self._failed = stamp, None
            self.policy = Policy(spec, generation=self.policy.generation + 1)
        logger.info("policy file %s reloaded: %d rules, default %s", self.path, len(spec.rules), spec.default)
