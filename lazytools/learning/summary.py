"""What `lazytools usage` shows: calls per tool in the store, decayed, and in how many sessions; and the tools
worth listing from the start that it suggests."""

from __future__ import annotations

import time
from dataclasses import dataclass

from .prior import HALF_LIFE_DAYS
from .records import UsageStore, plausible, power

__all__ = ["PIN_SESSION_SHARE", "ToolUsage", "UsageSummary", "summarize"]

PIN_SESSION_SHARE = 0.25
"""A tool is suggested for ALWAYS_AVAILABLE_TOOLS once sessions that called it successfully are this share of the
sessions that called any tool (decayed): one session in four finding it first is worth its place in every list."""
MAX_PINS = 5


@dataclass(frozen=True, slots=True)
class ToolUsage:
    tool: str
    calls: float
    """Successful calls, decayed."""
    failed: float
    session_share: float
    """Sessions that called it successfully, as a share of the sessions that called any tool (decayed)."""


@dataclass(frozen=True, slots=True)
class UsageSummary:
    searches: int
    calls: int
    sessions: int
    """Sessions that searched or called a tool."""
    tools: list[ToolUsage]
    """Most called first."""
    calling: int = 0
    """Of `sessions`, those that called a tool: each tool's session share is of these."""

    def always_available(self) -> list[str]:
        """The tools worth listing from the start: used in many sessions, at most MAX_PINS."""
        return [t.tool for t in self.tools if t.session_share >= PIN_SESSION_SHARE][:MAX_PINS]


def summarize(store: UsageStore, *, now: float | None = None, half_life: float = HALF_LIFE_DAYS * 86_400.0
              ) -> UsageSummary:
    """What `lazytools usage` shows: the store's calls per tool, decayed, and in how many sessions."""
    at = time.time() if now is None else now
    calls = store.calls()
    searches = store.searches()
    per_tool: dict[str, list[float]] = {}
    tool_sessions: dict[str, dict[str, float]] = {}
    sessions: dict[str, float] = {}
    for record in calls:
        if not plausible(record.at, at):
            continue
        weight = power(-(at - record.at) / half_life)
        row = per_tool.setdefault(record.tool, [0.0, 0.0])
        row[0 if record.ok else 1] += weight
        sessions[record.session] = max(sessions.get(record.session, 0.0), weight)
        if record.ok:
            seen = tool_sessions.setdefault(record.tool, {})
            seen[record.session] = max(seen.get(record.session, 0.0), weight)
    total = sum(sessions.values())
    tools = [ToolUsage(tool, row[0], row[1], sum(tool_sessions.get(tool, {}).values()) / total if total else 0.0)
             for tool, row in per_tool.items()]
    tools.sort(key=lambda t: (-t.calls, t.tool))
    searching = {record.session for record in searches if plausible(record.at, at)}
    return UsageSummary(len(searches), len(calls), len(searching | sessions.keys()), tools, calling=len(sessions))
