"""Prometheus metrics of a server: counters and histograms the middleware records per request (middleware/metrics.py), and gauges read
from the server's state when scraped (open sessions, enabled tools per session, upstreams up or down, reconnects,
policy and rate-limit refusals). Labels are bounded: methods from the protocol's list, tools and servers only as
the catalog names them and only when the caller may see them (an unknown name and a tool hidden from the caller
are both `(other)`: a counter must not tell a user that a hidden tool exists), outcomes from a fixed set; never a query or an argument."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector


class Upstreams(Protocol):
    """What a scrape reads of the gateway's upstreams: each one's name, whether it serves, how often it connected."""

    @property
    def upstreams(self) -> Iterable[Any]: ...


class Refusals(Protocol):
    @property
    def refusals(self) -> Mapping[str, int]: ...


class Observed(Protocol):
    """What a scrape reads of the server (`LazyServer` is one), named here so the metrics import no server wiring."""

    @property
    def store(self) -> Iterable[Any]: ...
    @property
    def front(self) -> Upstreams | None: ...
    @property
    def gate(self) -> Refusals: ...
    def rate_refusals(self) -> int: ...

__all__ = ["METHODS", "OTHER", "Metrics"]

OTHER = "(other)"
METHODS = frozenset({
    "initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
    "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
    "completion/complete", "logging/setLevel", "server/discover", "subscriptions/listen",
})
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
ENABLED_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100)
_SESSIONS_REMEMBERED = 10_000
_FOUND_REMEMBERED = 200
"""Per session: the tools its searches returned that a later call can convert (the newest ones)."""


class Metrics:
    """One registry per server (tests make several servers in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("lazytools_requests", "Requests by MCP method and outcome.", ["method", "outcome"],
                                registry=r)
        self.tool_calls = Counter("lazytools_tool_calls", "Tool calls (tools/call and invoke_tool) by server, tool "
                                  "and outcome.", ["server", "tool", "outcome"], registry=r)
        self.tool_seconds = Histogram("lazytools_tool_call_seconds", "Tool call latency by server.", ["server"],
                                      buckets=LATENCY_BUCKETS, registry=r)
        self.searches = Counter("lazytools_searches", "search_tools calls by outcome.", ["outcome"], registry=r)
        self.search_seconds = Histogram("lazytools_search_seconds", "search_tools latency.", buckets=LATENCY_BUCKETS,
                                        registry=r)
        self.conversions = Counter("lazytools_search_conversions", "Tool calls of a tool that a search returned "
                                   "earlier in the same session.", registry=r)
        self._found: OrderedDict[str, OrderedDict[str, None]] = OrderedDict()

    def found(self, session: str | None, names: Iterable[str]) -> None:
        """A search of `session` returned these tools."""
        if session is None:
            return
        seen = self._found.pop(session, None) or OrderedDict()
        for name in names:
            seen.pop(name, None)
            seen[name] = None
        while len(seen) > _FOUND_REMEMBERED:
            seen.popitem(last=False)
        self._found[session] = seen
        while len(self._found) > _SESSIONS_REMEMBERED:
            self._found.popitem(last=False)

    def called(self, session: str | None, tool: str) -> None:
        seen = self._found.get(session) if session is not None else None
        if seen is not None and tool in seen:
            del seen[tool]  # counted once per search that returned it
            self.conversions.inc()

    def closed(self, session: str) -> None:
        self._found.pop(session, None)

    def watch(self, server: Observed) -> None:
        """Read the server's state at each scrape."""
        self.registry.register(_ServerState(server))


class _ServerState(Collector):
    def __init__(self, server: Observed) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        server = self.server
        states = list(server.store)
        yield GaugeMetricFamily("lazytools_sessions_open", "Sessions open now.", value=len(states))
        counts = [len(state.enabled) for state in states if state.surface == "dynamic"]
        buckets = [(str(b), sum(1 for c in counts if c <= b)) for b in ENABLED_BUCKETS] + [("+Inf", len(counts))]
        yield HistogramMetricFamily("lazytools_session_enabled_tools", "Tools search enabled, per open dynamic "
                                    "session.", buckets=buckets, sum_value=sum(counts))
        up = GaugeMetricFamily("lazytools_upstream_up", "1 when an upstream server is connected and serving.",
                               labels=["server"])
        reconnects = CounterMetricFamily("lazytools_upstream_reconnects", "Connections of an upstream after its "
                                         "first.", labels=["server"])
        for upstream in server.front.upstreams if server.front is not None else ():
            up.add_metric([upstream.name], 1.0 if upstream.serving else 0.0)
            reconnects.add_metric([upstream.name], float(max(0, upstream.connections - 1)))
        yield up
        yield reconnects
        refusals = CounterMetricFamily("lazytools_policy_refusals", "Requests the policy refused, by what they "
                                       "named (tool, prompt, resource, arguments).", labels=["kind"])
        for kind, count in sorted(server.gate.refusals.items()):
            refusals.add_metric([kind], float(count))
        yield refusals
        yield CounterMetricFamily("lazytools_rate_limited", "Requests refused by a rate limit.",
                                  value=float(server.rate_refusals()))
