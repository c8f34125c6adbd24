"""What the parts of the Redis session store share (redis.py): the names of its keys and channels under one
prefix, and Redis trouble as `StateUnavailableError`, naming the operation and never the URL.

Keys (under `prefix`): `session:<id>` (`<rev>|<record JSON>`), `events:<id>` (a stream); channels `push:<id>` (one
session's GET stream), `ended` (deleted sessions) and `changed` (`<id>|<rev>` for every record write, `<id>|` for a
deletion, or a write that found the record gone: what keeps each replica's local copies of records current,
docs/scaling.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from redis.exceptions import AuthenticationError, RedisError

from .store import StateUnavailableError

__all__ = ["RedisKeys", "bounded", "reason", "redis_trouble"]


@dataclass(frozen=True, slots=True)
class RedisKeys:
    prefix: str

    def session(self, key: str) -> str:
        return f"{self.prefix}session:{key}"

    def events(self, key: str) -> str:
        return f"{self.prefix}events:{key}"

    def push(self, key: str) -> str:
        return f"{self.prefix}push:{key}"

    @property
    def ended(self) -> str:
        return f"{self.prefix}ended"

    @property
    def changed(self) -> str:
        return f"{self.prefix}changed"


def reason(exc: BaseException) -> str:
    """An error's class, and Redis's own message for an authentication error (it never holds the password)."""
    if isinstance(exc, AuthenticationError):
        return f"{type(exc).__name__}: {exc}"
    return type(exc).__name__


@contextmanager
def redis_trouble(error: Callable[[str], Exception], store: str, what: str) -> Iterator[None]:
    """Redis trouble as `error` ("<store> (Redis) unavailable during <what>: <error class>"), naming the operation
    and never the URL (it may hold a password)."""
    try:
        yield
    except (RedisError, OSError) as exc:
        raise error(f"{store} (Redis) unavailable during {what}: {type(exc).__name__}") from exc


def bounded(what: str) -> AbstractContextManager[None]:
    return redis_trouble(StateUnavailableError, "session store", what)
