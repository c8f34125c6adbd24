"""The policy file, kept current without a restart: re-read when its size, time or inode change (checked at most
once a second), bounded in size; an edit that does not parse or validate keeps the last good policy, with an error
in the log. A broken file at start-up stops the start (`ConfigError`)."""

from __future__ import annotations

import json
import logging
import os
import time
import tomllib
from pathlib import Path

from pydantic import ValidationError

from ..errors import ConfigError
from .rules import Policy, PolicySpec

__all__ = ["PolicyFile", "read_policy"]

logger = logging.getLogger(__name__)

CHECK_EVERY = 1.0
"""Seconds between two looks at the file's metadata."""


def read_policy(path: Path, max_bytes: int) -> PolicySpec:
    """Parse and validate a policy file: JSON when its name ends in `.json`, TOML otherwise."""
    with path.open("rb") as file:
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ConfigError(f"policy file {path} is larger than {max_bytes} bytes")
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

    def __init__(self, path: Path, *, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._stamp = self._stat()
        self.policy = Policy(read_policy(path, max_bytes))
        self._checked = time.monotonic()
        self._failed: tuple[int, int, int] | None = None

    def _stat(self) -> tuple[int, int, int]:
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
        if stamp != self._stamp and stamp != self._failed:
            self.reload(stamp)
        return self.policy

    def reload(self, stamp: tuple[int, int, int] | None = None) -> None:
        stamp = stamp or self._stat()
        try:
            spec = read_policy(self.path, self.max_bytes)
        except (ConfigError, OSError) as exc:
            logger.error("%s; keeping the last good policy", exc)
            self._failed = stamp
            return
        self._stamp, self._failed = stamp, None
        self.policy = Policy(spec, generation=self.policy.generation + 1)
        logger.info("policy file %s reloaded: %d rules, default %s", self.path, len(spec.rules), spec.default)
