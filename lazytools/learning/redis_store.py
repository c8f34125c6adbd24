"""The usage store shared by replicas: usage records in two capped Redis streams, and the hashing key they share.

Keys (under the state prefix): `usage:searches` and `usage:calls`, streams trimmed to the newest `keep` entries on
every add (XADD MAXLEN), each entry one compact JSON record and the id of the process that wrote it; `usage:key`,
the 32-byte key every replica hashes query terms (and session ids) with, made once by the first replica (SET NX).
None of them expires: their size is bounded by the caps, not by a TTL.

It runs on the usage log's writer thread (`learning.log.UsageLog`), so it uses redis-py's synchronous client: the
session store's asyncio pool (`state.redis.RedisState.client`) belongs to the event loop and cannot be used from
another thread. The connection is set up the same way: the same URL and timeout, a command on a connection Redis
closed sent again once, and Redis trouble turned into `UsageUnavailableError` (never with the URL: it may hold a
password).
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, cast

from redis import Redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.retry import Retry

from ..state.redis import redis_trouble
from .records import LOAD_LIMIT, CallRecord, Record, SearchRecord, UsageStore, UsageUnavailableError, plausible

__all__ = ["MAX_ENTRY_BYTES", "SHARED_KEEP", "RedisUsageStore", "open_redis"]

SHARED_KEEP = LOAD_LIMIT
"""Entries each stream keeps by default (the oldest go first): what a replica reads at start, and no more."""
MAX_ENTRY_BYTES = 64 * 1024
"""An entry larger than this (not one lazytools wrote: its records are bounded) is skipped when read."""
_KEY_BYTES = 32
_Entry = tuple[bytes, dict[bytes, bytes]]
"""A stream entry as redis-py returns it: its id and its fields."""
_PAGE = 10_000
"""Entries per command when reading history: one reply stays a few MB."""


def _bounded(what: str) -> AbstractContextManager[None]:
    return redis_trouble(UsageUnavailableError, "usage store", what)


def _search_entry(record: SearchRecord) -> str:
    return json.dumps({"i": record.id, "a": record.at, "s": record.session, "t": record.terms, "r": record.returned,
                       "e": record.enabled, "q": record.request}, separators=(",", ":"))


def _call_entry(record: CallRecord) -> str:
    return json.dumps({"a": record.at, "s": record.session, "n": record.tool, "k": record.ok, "f": record.search,
                       "t": record.terms, "b": record.after}, separators=(",", ":"))


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("not a list of strings")
    return tuple(value)


def _optional(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError("not a string")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value


def _time(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not plausible(float(value)):
        raise ValueError("not a plausible time")
    return float(value)


def _parse(kind: str, raw: bytes) -> Record | None:
    """The record an entry holds, or None for one that is not a well-formed record of `kind`."""
    if len(raw) > MAX_ENTRY_BYTES:
        return None
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            return None
        if kind == "searches":
            return SearchRecord(id=_text(data["i"]), at=_time(data["a"]), session=_text(data["s"]),
                                terms=_names(data["t"]), returned=_names(data["r"]), enabled=_names(data["e"]),
                                request=_optional(data.get("q")))
        ok = data["k"]
        if not isinstance(ok, bool):
            return None
        return CallRecord(at=_time(data["a"]), session=_text(data["s"]), tool=_text(data["n"]), ok=ok,
                          search=_optional(data.get("f")), terms=_names(data["t"]), after=_optional(data.get("b")))
    except (ValueError, KeyError, TypeError, RecursionError, OverflowError):
        return None


class RedisUsageStore:
    """Usage records of every replica in capped Redis streams; see the module's docstring."""

    def __init__(self, url: str, *, prefix: str = "lazytools:", timeout: float = 2.0, keep: int = SHARED_KEEP,
                 client: Redis | None = None) -> None:
        self.prefix = prefix
        self.keep = keep
        self.client: Redis = client if client is not None else Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 1),
            retry_on_error=[RedisConnectionError], health_check_interval=0)
        self.origin = uuid.uuid4().hex[:16]
        """This process's mark on its entries: `newer` skips them (the log learnt them when they were made)."""
        self._after = {"searches": "0-0", "calls": "0-0"}
        """Per stream, the id of the newest entry read."""

    def _stream(self, kind: str) -> str:
        return f"{self.prefix}usage:{kind}"

    @property
    def key_name(self) -> str:
        return f"{self.prefix}usage:key"

    def shared_key(self) -> bytes:
        """The replicas' hashing key: made by the first process to ask (SET NX), read by the others."""
        with _bounded("reading the hashing key"):
            self.client.set(self.key_name, secrets.token_bytes(_KEY_BYTES), nx=True)
            key = self.client.get(self.key_name)
        if not isinstance(key, bytes) or len(key) != _KEY_BYTES:
            raise UsageUnavailableError(f"{self.key_name} in Redis does not hold a {_KEY_BYTES}-byte key")
        return key

    def write(self, records: Sequence[Record]) -> None:
        with _bounded("writing usage"):
            pipe = self.client.pipeline(transaction=False)
            for record in records:
                if isinstance(record, SearchRecord):
                    kind, entry = "searches", _search_entry(record)
                else:
                    kind, entry = "calls", _call_entry(record)
                pipe.xadd(self._stream(kind), {"o": self.origin, "r": entry}, maxlen=self.keep, approximate=False)
            pipe.execute()

    def _history(self, kind: str, limit: int) -> list[Record]:
        """The newest `limit` entries of one stream, oldest first; the stream's cursor moves past them."""
        newest_first: list[_Entry] = []
        upper = "+"
        with _bounded("reading usage"):
            while len(newest_first) < limit:
                page = cast(list[_Entry], self.client.xrevrange(self._stream(kind), max=upper, min="-",
                                                                count=min(_PAGE, limit - len(newest_first))))
                if not page:
                    break
                newest_first.extend(page)
                if len(page) < _PAGE:
                    break
                upper = "(" + page[-1][0].decode()
        if newest_first:
            self._after[kind] = newest_first[0][0].decode()
        records = (_parse(kind, fields.get(b"r", b"")) for _, fields in reversed(newest_first))
        return [record for record in records if record is not None]

    def searches(self, limit: int = LOAD_LIMIT) -> list[SearchRecord]:
        return [record for record in self._history("searches", limit) if isinstance(record, SearchRecord)]

    def calls(self, limit: int = LOAD_LIMIT) -> list[CallRecord]:
        return [record for record in self._history("calls", limit) if isinstance(record, CallRecord)]

    def newer(self, limit: int) -> list[Record]:
        with _bounded("reading new usage"):
            answer = cast(list[tuple[bytes, list[_Entry]]] | None, self.client.xread(
                {self._stream(kind): after for kind, after in self._after.items()}, count=limit))
        found: list[Record] = []
        for stream, entries in answer or []:
            kind = stream.decode().removeprefix(f"{self.prefix}usage:")
            if kind not in self._after or not entries:
                continue
            self._after[kind] = entries[-1][0].decode()
            for _, fields in entries:
                if fields.get(b"o", b"").decode(errors="replace") == self.origin:
                    continue
                record = _parse(kind, fields.get(b"r", b""))
                if record is not None:
                    found.append(record)
        found.sort(key=lambda record: record.at)
        return found

    def close(self) -> None:
        try:
            self.client.close()
        except (RedisError, OSError):
            pass


def open_redis(url: str, *, prefix: str, timeout: float, keep: int = SHARED_KEEP) -> Callable[[], UsageStore]:
    """The opener of the shared store at `url`, for `UsageLog(..., shared=True)`: opening connects to nothing
    (the first command does), so a Redis that is down at start only pauses learning."""
    return lambda: RedisUsageStore(url, prefix=prefix, timeout=timeout, keep=keep)
