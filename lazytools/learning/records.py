"""What learning from use records, and where: a search and a call as records, the protocol of a store that keeps
them, and when a record's time is believable (a store may hold what something else wrote)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["EARLIEST", "LOAD_LIMIT", "MAX_REQUEST_CHARS", "MAX_SEARCH_TERMS", "MAX_SKEW", "CallRecord", "Decay",
           "Record", "SearchRecord", "UsageStore", "UsageUnavailableError", "plausible", "power"]

LOAD_LIMIT = 200_000
"""Records of each kind read from the store at start, newest first."""
MAX_REQUEST_CHARS = 500
"""Characters of a request's text stored."""
MAX_SEARCH_TERMS = 64
"""Hashed terms stored per search (the first ones)."""


@dataclass(frozen=True, slots=True)
class SearchRecord:
    id: str
    at: float
    session: str
    terms: tuple[str, ...]
    returned: tuple[str, ...]
    enabled: tuple[str, ...]
    request: str | None = None
    """The request's text, unless the operator keeps it out of the store (then only `terms`)."""


@dataclass(frozen=True, slots=True)
class CallRecord:
    at: float
    session: str
    tool: str
    ok: bool
    search: str | None = None
    """The id of the session's latest search that returned this tool, if any."""
    terms: tuple[str, ...] = ()
    """That search's terms."""
    after: str | None = None
    """The tool this session called just before, if any."""


Record = SearchRecord | CallRecord


class UsageUnavailableError(OSError):
    """The store cannot be reached now (a shared store's server is down or slow): learning pauses, then resumes."""


class UsageStore(Protocol):
    """Where usage records are kept. Called from one worker thread at a time, never from the event loop; trouble
    is an OSError (or sqlite3.Error), `UsageUnavailableError` when it may pass."""

    def write(self, records: Sequence[Record]) -> None: ...
    def searches(self, limit: int = LOAD_LIMIT) -> list[SearchRecord]:
        """The newest `limit` search records, oldest first."""
        ...
    def calls(self, limit: int = LOAD_LIMIT) -> list[CallRecord]:
        """The newest `limit` call records, oldest first."""
        ...
    def newer(self, limit: int) -> list[Record]:
        """Records other processes added since the last read (`searches`, `calls` or this), oldest first, at most
        `limit` of each kind: what keeps the prior of a replica up to date with the others'. A store nobody else
        writes returns none."""
        ...
    def shared_key(self) -> bytes | None:
        """The hashing key every process sharing this store uses, made by the first one (None: the store keeps
        none, the install's key file is used)."""
        ...
    def close(self) -> None: ...



@dataclass(slots=True)
class Decay:
    """Decayed counts kept as amounts at a fixed origin: adding is one multiply, no pass over old counts."""

    origin: float
    half_life: float

    def weight(self, at: float) -> float:
        return power((at - self.origin) / self.half_life)

    def now(self, at: float) -> float:
        """What a stored amount is worth at `at` (the amounts are at the origin's scale)."""
        return power(-(at - self.origin) / self.half_life)


_MAX_EXPONENT = 512.0
"""Half-lives a decay exponent is clamped to (2**512 is finite): a time far off never overflows a float."""
EARLIEST = 1_577_836_800.0
"""2020-01-01 UTC: a record dated before it is not one lazytools made (it is skipped)."""
MAX_SKEW = 300.0
"""Seconds a record may be dated after this process's clock (clocks of replicas differ a little); later ones are
skipped: a record of the far future would outweigh every other one."""


def power(exponent: float) -> float:
    if not math.isfinite(exponent):
        exponent = 0.0
    return float(2.0 ** min(max(exponent, -_MAX_EXPONENT), _MAX_EXPONENT))


def plausible(at: float, now: float | None = None) -> bool:
    """Whether `at` may be the time of a record: a finite time since 2020, not later than now (plus skew)."""
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
        return False
    return EARLIEST <= at <= (time.time() if now is None else now) + MAX_SKEW
