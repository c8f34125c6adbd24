"""The usage prior as one user or session reads it: what ranking is handed (`search.prior.Prior`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["PriorView"]


class _Counts(Protocol):
    """What the view reads of `prior.UsagePrior` (named here so that this module needs nothing of it)."""

    def __bool__(self) -> bool: ...
    def terms(self, query: str) -> tuple[str, ...]: ...
    def boosts(self, terms: Sequence[str], *, viewer: str | None = None) -> dict[str, float]: ...
    def companions(self, found: Sequence[str], *, viewer: str | None = None) -> list[tuple[str, str]]: ...
    def co_used(self, found: Sequence[str], *, viewer: str | None = None) -> list[tuple[str, str]]: ...


@dataclass(frozen=True, slots=True)
class PriorView:
    """`UsagePrior` as one source reads it (`search.prior.Prior`): others' patterns only above the floor."""

    prior: _Counts
    viewer: str | None

    def __bool__(self) -> bool:
        return bool(self.prior)

    def terms(self, query: str) -> tuple[str, ...]:
        return self.prior.terms(query)

    def boosts(self, terms: Sequence[str]) -> dict[str, float]:
        return self.prior.boosts(terms, viewer=self.viewer)

    def companions(self, found: Sequence[str]) -> list[tuple[str, str]]:
        return self.prior.companions(found, viewer=self.viewer)

    def co_used(self, found: Sequence[str]) -> list[tuple[str, str]]:
        return self.prior.co_used(found, viewer=self.viewer)
