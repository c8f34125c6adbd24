"""The server middleware that writes an audit line (audit.py) for every tools/call, invoke_tool, prompts/get and
resources/read, whatever route or outcome: it wraps the handlers, so nothing a handler does can skip it."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from ...audit import AuditEvent, AuditLog, noting_reasons
from ...identity import current_principal
from ...safetext import clip
from ...sdk import CallNext, HandlerResult
from ..metatools import INVOKE_TOOL
from .rate_limit import RATE_LIMITED

__all__ = ["AUDITED_METHODS", "AuditMiddleware"]

AUDITED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})

_LONGEST = 1024
"""Characters of a name or URI written (a client may send megabytes of one)."""

_REASON_OF_CODE = {types.INVALID_PARAMS: "invalid_arguments", types.INVALID_REQUEST: "invalid_request",
                   types.METHOD_NOT_FOUND: "invalid_request", RATE_LIMITED: "rate_limited"}
"""A JSON-RPC error's reason when nothing noted one (an SDK error, a refusal raised as such)."""

Resolver = Callable[[str, str], str | None]
"""(method, tool/prompt name or URI) → the upstream (or in-process group) that serves it, if known."""


class AuditMiddleware:
    """`ServerMiddleware`: one `AuditEvent` per audited request, recorded when it ends."""

    def __init__(self, log: AuditLog, *, upstream_of: Resolver,
                 session_of: Callable[[ServerRequestContext[Any, Any]], str | None]) -> None:
        self.log = log
        self.upstream_of = upstream_of
        self.session_of = session_of

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in AUDITED_METHODS or ctx.request_id is None:
            return await call_next(ctx)
        method, target, arguments = _described(ctx.method, ctx.params or {})
        started, clock = time.time(), time.perf_counter()
        outcome, error, reason = "cancelled", None, "cancelled"
        with noting_reasons() as noted:
            try:
                result = await call_next(ctx)
                outcome = "error" if _is_error(result) else "ok"
                reason = noted[0] if noted else "tool_error" if outcome == "error" else "ok"
                return result
            except MCPError as exc:
                outcome, error = "error", exc.error.message[:300]
                reason = noted[0] if noted else _REASON_OF_CODE.get(exc.error.code, "internal_error")
                raise
            except ValidationError:
                outcome, error, reason = "invalid", "malformed params", "invalid_request"
                raise
            except Exception as exc:
                outcome, error = "error", type(exc).__name__
                reason = noted[0] if noted else "internal_error"
                raise
            finally:
                upstream = self.upstream_of(method, target) if target is not None else None
                self.log.record(AuditEvent(
                    method=method, target=target, principal=current_principal(), session=self.session_of(ctx),
                    upstream=upstream, outcome=outcome, duration_ms=(time.perf_counter() - clock) * 1000,
                    arguments=arguments, started=started, error=error, reason=reason,
                ))


def _described(method: str, params: Mapping[str, Any]) -> tuple[str, str | None, Any]:
    """(audited method, target, arguments) of raw params: an `invoke_tool` call is recorded as the tool it calls."""
    if method == "resources/read":
        uri = params.get("uri")
        return method, clip(uri, _LONGEST) if isinstance(uri, str) else None, None
    name = params.get("name")
    arguments = params.get("arguments")
    if method == "tools/call" and name == INVOKE_TOOL and isinstance(arguments, Mapping):
        tool = arguments.get("tool_name")
        return INVOKE_TOOL, clip(tool, _LONGEST) if isinstance(tool, str) else None, arguments.get("arguments")
    return method, clip(name, _LONGEST) if isinstance(name, str) else None, arguments


def _is_error(result: HandlerResult) -> bool:
    if isinstance(result, BaseModel):
        return getattr(result, "is_error", None) is True
    return isinstance(result, dict) and result.get("isError") is True
