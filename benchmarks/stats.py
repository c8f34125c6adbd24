"""Summaries of timing samples."""

from __future__ import annotations

import statistics

__all__ = ["percentile", "percentiles"]


def percentile(samples: list[float], percent: int) -> float:
    """The `percent`th percentile of samples (1-99), in the samples' unit (`statistics.quantiles`, inclusive:
    within the samples' range)."""
    if len(samples) < 2:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[percent - 1]


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p99) of samples, in the samples' unit."""
    return percentile(samples, 50), percentile(samples, 99)
