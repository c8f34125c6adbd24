"""What a `LazyServer` is made of, built by the assembly root (app.py `build_server`) and handed in whole."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.context import ServerMiddleware

from ..catalog import Catalog
from ..learning.log import UsageLog
from ..search import LiveIndex
from ..settings import Settings
from .access import Gate
from .metrics import Metrics
from .middleware.rate_limit import RateLimitMiddleware
from .passthrough import PassThrough, UpstreamFeatures
from .registry import SessionRegistry
from .subscriptions import LocalSubscriptionBus

__all__ = ["ServerParts"]


@dataclass(frozen=True, slots=True)
class ServerParts:
    catalog: Catalog
    settings: Settings
    sessions: SessionRegistry
    """Each connection's session state (its store is `sessions.store`)."""
    gate: Gate
    """What each principal may see and call: every route reads its Access (access.py)."""
    index: LiveIndex
    events: LocalSubscriptionBus
    """Where 2026-07-28 clients hear of catalog changes (`subscriptions/listen`)."""
    middleware: Sequence[ServerMiddleware[Any]]
    """Around every request, outermost first."""
    always_available: Sequence[str]
    """ALWAYS_AVAILABLE_TOOLS, checked against the catalog."""
    front: UpstreamFeatures | None = None
    passing: PassThrough | None = None
    """The upstreams' prompts, resources and client side, served through (present with `front`)."""
    usage: UsageLog | None = None
    metrics: Metrics | None = None
    limited: RateLimitMiddleware | None = None
    """The rate limit among `middleware`, if one is on (its refusals are a metric)."""
