"""One upstream MCP server as the gateway uses it: the requests sent to it for clients (calls, prompts, reads,
completions, notifications), each with its deadline, progress and errors in lazytools' terms, and what the server
asks and tells while it serves one (relay.py). Its connection's life is `Lifecycle`'s (lifecycle.py)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from pydantic import ValidationError

from ...catalog import Catalog
from ...errors import UpstreamError, UpstreamTimeoutError, UpstreamUnavailableError
from ...origin import current_origin, session_key
from ...settings import Settings
from .bounds import ProgressGate
from .config import HttpServer, ServerConfig
from .lifecycle import Backoff, Lifecycle
from .offerings import NamedUris, uris_in
from .relay import Inflight, Relay

__all__ = ["Upstream"]

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer("lazytools")


class Upstream(Lifecycle):
    """One configured server: its connection (`Lifecycle`) and the requests clients send through it."""

    def __init__(self, config: ServerConfig, *, catalog: Catalog, settings: Settings,
                 backoff: Backoff = Backoff(), chain: str = "", relay: Relay | None = None,
                 owner: str | None = None, auth: httpx2.Auth | None = None) -> None:
        super().__init__(config, catalog=catalog, settings=settings, backoff=backoff, chain=chain, auth=auth)
        self.call_timeout = config.timeout or settings.call_timeout
        self.call_ceiling = max(settings.call_timeout_ceiling, self.call_timeout)
        # The client side (relay.py): requests in flight, where their messages go, a session that owns it.
        self.inflight = Inflight()
        """The client requests this upstream serves now: where its messages go when nothing else says."""
        self.relay = relay if relay is not None else Relay()
        self.owner = owner
        """The session key of the client this upstream was started for (`"scope": "session"`); None when shared."""
        self.per_session: Callable[[Upstream, str], Awaitable[Upstream]] | None = None
        """Set for `"scope": "session"` servers: the connection of a session, which serves its requests."""
        self.per_user: Callable[[Upstream], Awaitable[Upstream]] | None = None
        """Set for servers with `identity`: the connection carrying the current user's credentials."""
        self.seen_uris = NamedUris()
        """URIs its results named, per client session (resources/read routes them for that session only)."""
        self.on_resource_updated: Callable[[Upstream, str], Awaitable[None]] | None = None

    # -- requests ------------------------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Forward a call; the upstream's result (isError, content, structuredContent) comes back unchanged."""
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=tool, arguments=arguments))
        result: types.CallToolResult = await self.request(request, types.CallToolResult, repr(tool))
        # So resources/read can route the resource_link URIs it holds, for the session that called.
        self.seen_uris.add(session_key(current_origin()), uris_in(result))
        return result

    async def request(self, request: types.ClientRequest, result_type: type[Any], what: str, *,
                      progress: bool = True) -> Any:
        """Send one client request on, for the client request being served (`current_origin()`).

        The upstream always gets a progressToken: each progress it reports moves the deadline to `call_timeout`
        from now (a call that keeps reporting is alive) up to `call_ceiling` after the start, and reaches the
        client against the client's own token when it gave one. A client that cancels its request cancels this
        await, and the SDK then sends the upstream `notifications/cancelled`. `what` names the request in errors.
        """
        if self.per_user is not None:
            own = await self.per_user(self)
            return await own.request(request, result_type, what, progress=progress)
        origin = current_origin()
        if self.per_session is not None and origin is not None and origin.client is not None:
            own = await self.per_session(self, origin.client.key)
            return await own.request(request, result_type, what, progress=progress)
        try:
            return await self._send(request, result_type, what, progress=progress)
        except _SessionLostError:
            # The server had not run it (it refused the session id), so sending it again is safe: once, on the
            # new connection `_connected` waits for.
            return await self._send(request, result_type, what, progress=progress)

    async def _send(self, request: types.ClientRequest, result_type: type[Any], what: str, *,
                    progress: bool) -> Any:
        origin = current_origin()
        client = await self._connected(self.call_timeout)
        ceiling = anyio.current_time() + self.call_ceiling
        # A client that does not read cannot make progress pile up: at most a few wait, the rest are dropped.
        gate = ProgressGate(origin.progress) if origin is not None and origin.progress is not None else None
        with anyio.CancelScope(deadline=min(anyio.current_time() + self.call_timeout, ceiling)) as scope:

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                scope.deadline = min(anyio.current_time() + self.call_timeout, ceiling)
                if gate is not None:
                    await gate(progress, total, message)

            try:
                # A span per upstream request; inside it the SDK's client span puts the trace context in `_meta`
                # (traceparent), so the upstream's own spans join the caller's trace.
                with self.inflight.serving(origin), _tracer.start_as_current_span(
                        f"lazytools upstream {self.name}", kind=SpanKind.CLIENT,
                        attributes={"lazytools.upstream": self.name, "mcp.method.name": request.method}):
                    # send_request, not call_tool: the client's own output-schema check would rewrite or reject
                    # results; a gateway passes them on as they are and lets the end client judge.
                    return await client.session.send_request(request, result_type,
                                                             progress_callback=on_progress if progress else None)
            except MCPError as exc:
                if exc.code == CONNECTION_CLOSED:
                    if self._client is client:  # not a late answer from a connection already replaced
                        self._connection_lost()
                    raise UpstreamUnavailableError(self.name, f"the connection closed during {what} (the server "
                                                              "exited or crashed); reconnecting") from None
                if isinstance(self.config, HttpServer) and _session_lost(exc):
                    # An HTTP server that restarted (or expired the session) answers 404 to every request of the
                    # old session: this connection is useless, reconnect (a new session).
                    if self._client is client:
                        self._connection_lost()
                    raise _SessionLostError(self.name, f"the server no longer knows this connection's session "
                                                       f"({exc.error.message}); reconnecting") from None
                raise UpstreamError(self.name, f"{what} failed with error {exc.code}: {exc.error.message}") from None
            except ValidationError as exc:
                raise UpstreamError(self.name, f"{what} returned a malformed result: "
                                               f"{exc.errors()[0]['msg'] if exc.errors() else exc}") from None
        if anyio.current_time() >= ceiling:
            raise UpstreamTimeoutError(self.name, f"{what} ran past the ceiling of {self.call_ceiling:g} s "
                                                  "(the call was cancelled)")
        raise UpstreamTimeoutError(self.name, f"{what} did not answer within {self.call_timeout:g} s "
                                              "(the call was cancelled)")

    async def notify(self, notification: types.ClientNotification) -> None:
        """Send a notification if connected (a server that is down hears nothing; it asks again when up)."""
        client = self._client
        if client is not None and self.serving:
            await client.session.send_notification(notification)

    # -- what it asks and tells while serving a client ---------------------------------------------------------

    async def _on_notification(self, message: Any) -> None:
        if isinstance(message, types.LoggingMessageNotification):
            await self.relay.log(self.name, self.inflight, self.owner, message.params)
        elif isinstance(message, types.ResourceUpdatedNotification) and self.on_resource_updated is not None:
            await self.on_resource_updated(self, str(message.params.uri))

    async def _sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        result_type = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        return await self.relay.ask(self.name, self.inflight, self.owner, types.CreateMessageRequest(params=params),
                                    result_type)

    async def _elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any:
        return await self.relay.ask(self.name, self.inflight, self.owner, types.ElicitRequest(params=params),
                                    types.ElicitResult)

    async def _list_roots(self, context: Any) -> Any:
        return await self.relay.ask(self.name, self.inflight, self.owner, types.ListRootsRequest(),
                                    types.ListRootsResult)


class _SessionLostError(UpstreamUnavailableError):
    """An HTTP upstream answered that it does not know the connection's session: the request was not run."""


def _session_lost(exc: MCPError) -> bool:
    """Whether `exc` is an HTTP server's 404 for an unknown session (the SDK's server says `Session not found`,
    the SDK's client `Session terminated` when the 404 has no JSON-RPC body)."""
    message = exc.error.message.lower()
    return exc.code == types.INVALID_REQUEST and message.startswith("session") and (
        "not found" in message or "terminated" in message)
