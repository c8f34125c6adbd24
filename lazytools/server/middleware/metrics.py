"""Per-request metrics: each request counted by method and outcome, tool calls and searches timed (metrics.py
holds the series and what is read when scraped)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from ..metatools import INVOKE_TOOL, SEARCH_TOOLS
from ..metrics import METHODS, OTHER, Metrics

__all__ = ["MetricsMiddleware"]


class MetricsMiddleware:
    """`ServerMiddleware`: counts every request by method and outcome, and times tool calls and searches."""

    def __init__(self, metrics: Metrics, *, server_of: Callable[[str], str | None],
                 session_of: Callable[[ServerRequestContext[Any, Any]], str | None]) -> None:
        self.metrics = metrics
        self.server_of = server_of
        self.session_of = session_of
        self._children: dict[tuple[int | str, ...], Any] = {}
        """Each labelled series, once looked up: prometheus' `labels()` builds and locks on every call. Bounded as
        the labels are (methods, outcomes, the catalog's servers and tools)."""

    def _series(self, metric: Any, *labels: str) -> Any:
        key: tuple[int | str, ...] = (id(metric), *labels)  # the metrics live as long as this middleware's Metrics
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:
            return await call_next(ctx)
        method = ctx.method if ctx.method in METHODS else OTHER
        tool = _tool_of(ctx.params) if method == "tools/call" else None
        # Looked up before the call, in the caller's view (AccessMiddleware has made it ready): a tool hidden from
        # the caller counts as an unknown name does, or the counter would tell it the hidden tool exists.
        server = self.server_of(tool) if tool is not None and tool != SEARCH_TOOLS else None
        clock = time.perf_counter()
        outcome = "cancelled"
        try:
            result = await call_next(ctx)
            outcome = "error" if _is_error(result) else "ok"
            return result
        except MCPError:
            outcome = "error"
            raise
        except ValidationError:
            outcome = "invalid"
            raise
        except Exception:
            outcome = "error"
            raise
        finally:
            elapsed = time.perf_counter() - clock
            m = self.metrics
            self._series(m.requests, method, outcome).inc()
            if tool == SEARCH_TOOLS:
                m.searches.labels(outcome).inc()
                m.search_seconds.observe(elapsed)
            elif tool is not None:
                label, server_label = (tool, server) if server is not None else (OTHER, OTHER)
                self._series(m.tool_calls, server_label, label, outcome).inc()
                self._series(m.tool_seconds, server_label).observe(elapsed)
                if server is not None and outcome == "ok":
                    m.called(self.session_of(ctx), tool)


def _tool_of(params: Mapping[str, Any] | None) -> str | None:
    """The tool a tools/call runs: its name, or for invoke_tool the tool it names."""
    name = (params or {}).get("name")
    if name == INVOKE_TOOL:
        arguments = (params or {}).get("arguments")
        target = arguments.get("tool_name") if isinstance(arguments, Mapping) else None
        return target if isinstance(target, str) else OTHER
    return name if isinstance(name, str) else OTHER


def _is_error(result: HandlerResult) -> bool:
    if isinstance(result, BaseModel):
        return getattr(result, "is_error", None) is True
    return isinstance(result, dict) and result.get("isError") is True
