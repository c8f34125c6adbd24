"""Summaries of timing samples."""

from __future__ import annotations

import statistics

__all__ = ["percentiles"]


def percentiles(samples: list[float]) -> tuple[float, float]:
    """(p50, p99) of samples, in the samples' unit (`statistics.quantiles`, inclusive: within the samples' range)."""
    if len(samples) < 2:
        return samples[0], samples[0]
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49], cuts[98]
