"""One upstream MCP server: connect, put its tools in the catalog, forward calls, reconnect when it drops.

Each `Upstream.run` is one task that owns the connection for its whole life (anyio wants a connection's task
groups entered and left by the same task): connect within `connect_timeout`, list tools, then wait for the
upstream to announce a tool-list change or for the connection to end; on failure, retry with backoff. Calls
come from other tasks (the server's request handlers) and share the connection.
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from pydantic import ValidationError

from ...catalog import Catalog, Group
from ...errors import UpstreamError, UpstreamTimeoutError, UpstreamUnavailableError
from ...origin import current_origin, session_key
from ...safetext import clip, redact_secrets
from ...sdk import create_mcp_http_client
from ...settings import CHAIN_VARIABLE, Settings
from ...streams import WatchedReadStream
from .bounds import ProgressGate, bound_notification
from .config import HttpServer, ServerConfig
from .listing import screen_listing
from .offerings import NamedUris, Offerings, list_offerings, uris_in
from .relay import Inflight, Relay
from .stderr import StderrTail, labelled_stderr
from .stdio import stdio_client
from .tools import about_of, list_tools, summary_of, tool_entries

__all__ = ["Backoff", "State", "Upstream", "describe_failure"]

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer("lazytools")

_CLIENT_INFO = types.Implementation(name="lazytools-gateway", version="0.1")


@dataclass(frozen=True, slots=True)
class Backoff:
    """Seconds between reconnection attempts: `first`, doubling up to `most`. A connection that stayed up for
    `stable` seconds and then dropped is retried at once; one that keeps dropping sooner backs off like a failure,
    so a server that crashes right after starting is not respawned in a tight loop."""

    first: float = 1.0
    most: float = 60.0
    stable: float = 10.0

    def after(self, failures: int) -> float:
        return min(self.first * 2.0 ** max(failures - 1, 0), self.most)


State = Literal["connecting", "serving", "failed", "stopped"]
"""An upstream's life: connecting → serving → failed → (after a backoff, or at once on next use) connecting …;
stopped once the gateway closes. Only `serving` has a client that calls may use."""


class Upstream:
    """The connection to one configured server and the catalog group it fills."""

    def __init__(self, config: ServerConfig, *, catalog: Catalog, settings: Settings,
                 backoff: Backoff = Backoff(), chain: str = "", relay: Relay | None = None,
                 owner: str | None = None, auth: httpx2.Auth | None = None) -> None:
        self.config = config
        self.auth = auth
        """Per-request credentials of an HTTP connection that serves one user (credentials.py); None when shared."""
        self.name = config.name
        self.catalog = catalog
        self.backoff = backoff
        self.call_timeout = config.timeout or settings.call_timeout
        self.call_ceiling = max(settings.call_timeout_ceiling, self.call_timeout)
        self.connect_timeout = settings.connect_timeout
        self.max_offerings = settings.max_upstream_offerings
        self.max_line_bytes = 2 * settings.max_result_bytes + 1024 * 1024
        """Longest message read from a stdio upstream: a result up to the limit, JSON escapes, the envelope."""
        self.pinned = config.defer_loading is False or (config.defer_loading is None and not settings.defer_all)
        self.chain = chain
        # What a reader of the gateway sees.
        self.state: State = "connecting"
        self.error: str | None = None
        """Why the last attempt failed or the connection ended; None while serving."""
        self.started = anyio.Event()
        """Set when the first attempt is over, whether it connected or not."""
        self.connections = 0
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
        # Besides tools (offerings.py): its prompts, resources and templates, and the URIs its results named.
        self.offerings = Offerings()
        self.seen_uris = NamedUris()
        """URIs its results named, per client session (resources/read routes them for that session only)."""
        self.on_offerings_changed: Callable[[Upstream], Awaitable[None]] | None = None
        self.on_resource_updated: Callable[[Upstream, str], Awaitable[None]] | None = None
        self.wanted_level: Callable[[], types.LoggingLevel | None] | None = None
        """The log level its clients asked for (front.py), sent on each connection before it serves; None: none."""
        # The current connection: its client (set exactly while `serving`), when it came up, and what `_serve`
        # waits on (`_signal`, with `_relist` saying the tool list changed).
        self._client: Client | None = None
        self._mode = "legacy"
        """The handshake era first: every server speaks it but those that are 2026-07-28 only."""
        self._up_since: float | None = None
        self._signal = anyio.Event()
        self._relist = False
        self._relist_offerings = False
        # The reconnect loop: `_wake` cuts a backoff short; calls wait on `_attempt_over` for a fresh attempt.
        self._wake = anyio.Event()
        self._attempts_started = 0
        self._attempts_over = 0
        self._attempt_over = anyio.Event()
        self._stderr: TextIO = sys.stderr  # a pipe to labelled log lines while `run` runs
        self._stderr_tail = StderrTail()

    @property
    def serving(self) -> bool:
        """Whether calls can go through now (`state` is read afresh: it changes across awaits)."""
        return self.state == "serving"

    # -- the connection's life --------------------------------------------------------------------------------

    async def run(self) -> None:
        """Connect and serve until cancelled, reconnecting after failures."""
        if self.name not in {group.name for group in self.catalog.groups}:
            # An empty group says "this server exists but serves nothing yet"; its tools arrive when it does.
            self.catalog.set_group(Group(self.name, self.config.description or ""), [])
        try:
            async with labelled_stderr(self.name, self._stderr_tail) as self._stderr:
                await self._reconnect_forever()
        finally:
            self.state = "stopped"

    async def _reconnect_forever(self) -> None:
        failures = 0
        while True:
            self._wake = anyio.Event()
            self._attempts_started += 1
            self._stderr_tail.lines.clear()  # what this attempt's process says, not the last one's
            try:
                await self._connect_and_serve()
                reason = "the connection closed (the server exited or crashed)"
            except Exception as exc:  # any failure of one upstream is its own, never the gateway's
                if self._mode == "legacy" and _refused_handshake(exc):
                    logger.info("upstream %r refuses the initialize handshake; connecting in the 2026 era", self.name)
                    self._mode = "auto"
                    self._attempts_started -= 1  # the same attempt, in the other era
                    continue
                reason = describe_failure(exc, cwd=getattr(self.config, "cwd", None),
                                          command=getattr(self.config, "command", None))
            stayed_up = self._up_since is not None and anyio.current_time() - self._up_since >= self.backoff.stable
            failures = 0 if stayed_up else failures + 1
            if failures <= 1 and (said := await self._stderr_tail.settled()):  # the warnings, not the retries
                reason += f" (its stderr ended with: {said})"
            self._went_down(reason, failures)
            if failures:
                with anyio.move_on_after(self.backoff.after(failures)):
                    await self._wake.wait()  # a call to one of its tools retries at once ("on next use")

    async def _connect_and_serve(self) -> None:
        self.state, self._relist, self._up_since = "connecting", False, None
        self._signal = anyio.Event()
        # The deadline covers start-up, initialize and the first tools/list, then is lifted for the session.
        with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as scope:
            screen = _Screen(self.name, keep=self.max_offerings + 1)  # one more: list_offerings then warns
            async with Client(_watched(self._transport(), self._connection_lost, screen), mode=self._mode,
                              cache=None, client_info=_CLIENT_INFO, message_handler=self._on_message,
                              # Declared to every upstream, so it shows the tools that need them; each request
                              # goes to the client whose call is in flight, or fails with why (relay.py).
                              sampling_callback=self._sampling, elicitation_callback=self._elicitation,
                              list_roots_callback=self._list_roots) as client:
                screen.version = client.protocol_version
                await self._refresh(client)
                await self._refresh_offerings(client)
                await self._send_wanted_level(client)
                scope.deadline = math.inf
                self._came_up(client)
                try:
                    async with anyio.create_task_group() as tg:
                        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                            tg.start_soon(self._listen, client)  # 2026-07-28: changes come on a listen stream
                        await self._serve(client)
                        tg.cancel_scope.cancel()
                finally:
                    self._client = None
                    if self.serving:  # ended by an error of ours or of the SDK, not by a lost stream
                        self.state = "failed"
        if scope.cancelled_caught:
            raise TimeoutError(f"did not start and answer initialize and tools/list within {self.connect_timeout:g} s")

    async def _serve(self, client: Client) -> None:
        while self.state == "serving":
            await self._signal.wait()
            self._signal = anyio.Event()
            if self._relist and self.state == "serving":
                self._relist = False
                try:
                    with anyio.fail_after(self.connect_timeout):
                        await self._refresh(client)
                except Exception as exc:  # keep serving the tools we know; the next change retries
                    logger.warning("upstream %r: re-listing tools failed: %s", self.name, describe_failure(exc))
            if self._relist_offerings and self.state == "serving":
                self._relist_offerings = False
                with anyio.move_on_after(self.connect_timeout):
                    await self._refresh_offerings(client)

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._relist = True
                    self._signal.set()
        except Exception as exc:  # its tools still work; only their changes go unnoticed until a reconnection
            logger.warning("upstream %r: cannot follow tool list changes: %s", self.name, describe_failure(exc))

    def _came_up(self, client: Client) -> None:
        self._client = client
        self._up_since = anyio.current_time()
        self.connections += 1
        if self.state == "connecting":  # not if its stream already ended: `_serve` then returns at once
            self.state = "serving"
        self.error = None
        level = logging.INFO if self.connections == 1 else logging.WARNING
        tools = len(self.catalog.in_group(self.name))
        logger.log(level, "upstream %r: %s, %d tool%s", self.name,
                   "connected" if self.connections == 1 else "reconnected", tools, "" if tools == 1 else "s")
        self._finish_attempt()

    def _went_down(self, reason: str, failures: int) -> None:
        first_failure = not self.started.is_set()
        came_up = self._attempts_over == self._attempts_started  # this attempt connected, then dropped
        self.state, self.error = "failed", reason
        retry = f"retrying in {self.backoff.after(failures):g} s" if failures else "reconnecting"
        verb = "failed to start" if first_failure else ("disconnected" if came_up else "is down")
        level = logging.WARNING if failures <= 1 else logging.INFO
        logger.log(level, "upstream %r %s: %s; %s", self.name, verb, reason, retry)
        if not came_up:
            self._finish_attempt()

    def _finish_attempt(self) -> None:
        self._attempts_over += 1
        over, self._attempt_over = self._attempt_over, anyio.Event()
        over.set()
        self.started.set()

    def _connection_lost(self) -> None:
        if self.state in ("connecting", "serving"):
            self.state = "failed"
        self._signal.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._relist = True
            self._signal.set()
        elif isinstance(message, types.LoggingMessageNotification):
            await self.relay.log(self.name, self.inflight, self.owner, message.params)
        elif isinstance(message, types.PromptListChangedNotification | types.ResourceListChangedNotification):
            self._relist_offerings = True
            self._signal.set()
        elif isinstance(message, types.ResourceUpdatedNotification) and self.on_resource_updated is not None:
            await self.on_resource_updated(self, str(message.params.uri))
        elif isinstance(message, Exception):
            logger.debug("upstream %r: transport error: %s", self.name, message)

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

    def _transport(self) -> AbstractAsyncContextManager[Any]:
        config = self.config
        if isinstance(config, HttpServer):
            if config.type == "sse":
                return sse_client(config.url, headers=dict(config.headers) or None, timeout=self.connect_timeout,
                                  auth=self.auth)
            return _streamable_http(config.url, dict(config.headers), self.auth)
        # "replace": with the SDK's strict default, one byte of invalid UTF-8 on an upstream's stdout stops its
        # reader for good and every later call hangs until its timeout; replaced, the line is junk and dropped.
        params = StdioServerParameters(command=config.command, args=list(config.args),
                                       env={**config.env, CHAIN_VARIABLE: self.chain}, cwd=config.cwd,
                                       encoding_error_handler="replace")
        # Its stderr becomes our log lines, named by the server: what a user needs to see when it fails.
        return stdio_client(params, errlog=self._stderr, max_line_bytes=self.max_line_bytes)

    # -- tools ------------------------------------------------------------------------------------------------

    async def _refresh(self, client: Client) -> None:
        """List the upstream's tools and replace this server's catalog group if anything changed."""
        tools = await list_tools(client)
        group = Group(self.name, summary_of(self.config, client), about=about_of(self.config, client))
        entries = tool_entries(self.name, self.config, tools, call=self.call, pinned=self.pinned)
        if group in self.catalog.groups and entries == self.catalog.in_group(self.name):
            return  # a reconnection or a list_changed that changed nothing: no index rebuild, no notifications
        await self.catalog.update_group(group, entries)

    async def _refresh_offerings(self, client: Client) -> None:
        """List its prompts, resources and templates; tell the front when they changed. A list that fails keeps its
        old items, alone (offerings.py)."""
        try:
            offerings = await list_offerings(client, self.config, limit=self.max_offerings, previous=self.offerings)
        except Exception as exc:  # its tools still serve
            logger.warning("upstream %r: listing prompts and resources failed: %s", self.name, describe_failure(exc))
            return
        if offerings != self.offerings:
            self.offerings = offerings
            if self.on_offerings_changed is not None:
                await self.on_offerings_changed(self)

    async def _send_wanted_level(self, client: Client) -> None:
        """A new connection (a reconnection, a session's own) gets the level already asked for; the front sends
        later changes."""
        level = self.wanted_level() if self.wanted_level is not None else None
        if level is None or client.server_capabilities.logging is None:
            return
        try:
            await client.session.send_request(types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)),
                                              types.EmptyResult)
        except Exception as exc:  # its tools still serve, at its own default level
            logger.info("upstream %r: setting its log level failed: %s", self.name, describe_failure(exc))

    # -- calls ------------------------------------------------------------------------------------------------

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
        client = await self._connected()
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

    @property
    def completes(self) -> bool:
        """Whether the connected server declares completions (answers `completion/complete`)."""
        return self._client is not None and self._client.server_capabilities.completions is not None

    @property
    def logs(self) -> bool:
        """Whether the connected server declares logging (accepts `logging/setLevel`)."""
        return self._client is not None and self._client.server_capabilities.logging is not None

    async def notify(self, notification: types.ClientNotification) -> None:
        """Send a notification if connected (a server that is down hears nothing; it asks again when up)."""
        client = self._client
        if client is not None and self.serving:
            await client.session.send_notification(notification)

    async def _connected(self) -> Client:
        if self.state != "serving":
            # Down: wake the reconnect loop now ("on next use") and wait, within the call's own time budget, for
            # the first attempt that starts after this call: one spawn per call at most, never a retry storm.
            target = self._attempts_started + 1
            self._wake.set()
            with anyio.move_on_after(min(self.call_timeout, self.connect_timeout)):
                while not self.serving and self._attempts_over < target:
                    await self._attempt_over.wait()
        client = self._client
        if client is None or not self.serving:
            raise UpstreamUnavailableError(self.name, f"not connected ({self.error or 'starting'}); lazytools "
                                                      "keeps retrying in the background")
        return client


class _SessionLostError(UpstreamUnavailableError):
    """An HTTP upstream answered that it does not know the connection's session: the request was not run."""


def _session_lost(exc: MCPError) -> bool:
    """Whether `exc` is an HTTP server's 404 for an unknown session (the SDK's server says `Session not found`,
    the SDK's client `Session terminated` when the 404 has no JSON-RPC body)."""
    message = exc.error.message.lower()
    return exc.code == types.INVALID_REQUEST and message.startswith("session") and (
        "not found" in message or "terminated" in message)


def _refused_handshake(exc: BaseException) -> bool:
    """Whether `exc` is a server's answer that it does not do the initialize handshake (a 2026-07-28-only server)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return isinstance(exc, MCPError) and exc.code == UNSUPPORTED_PROTOCOL_VERSION


def describe_failure(exc: BaseException, *, cwd: Any = None, command: Any = None) -> str:
    """One line saying why a connection failed, from the innermost useful exception (`command`: the upstream's
    command, named when it cannot be started)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and cwd is not None and exc.filename is not None and \
            str(exc.filename) == str(cwd):
        return f"working directory not found: {cwd}"
    if isinstance(exc, FileNotFoundError):
        name = exc.filename if exc.filename is not None else command
        if name is None:
            return f"command not found: {exc}"
        where = "" if os.sep in str(name) else " on PATH"
        return f"command not found: `{clip(str(name), 200)}` not found{where}"
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return "it exited or closed the connection before answering"  # the caller adds what its stderr said
    if isinstance(exc, MCPError):
        return f"error {exc.code}: {exc.error.message}"
    if isinstance(exc, TimeoutError) and str(exc):
        return str(exc)
    text = redact_secrets(str(exc).strip())  # it is logged and may reach the client: no URL's key or header value
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str], auth: httpx2.Auth | None) -> AsyncIterator[Any]:
    # The SDK leaves a caller-made HTTP client open; this one carries the config's headers and is ours to close.
    async with create_mcp_http_client(headers=headers or None, auth=auth) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


class _Screen:
    """Drops the malformed items of a listing and cuts long lists of prompts and resources (listing.py), cuts
    oversized progress and log messages (bounds.py); knows the version once negotiated."""

    def __init__(self, upstream: str, *, keep: int | None = None) -> None:
        self.upstream = upstream
        self.keep = keep
        self.version: str | None = None

    def __call__(self, item: Any) -> Any:
        return screen_listing(bound_notification(item), upstream=self.upstream, version=self.version, keep=self.keep)


@asynccontextmanager
async def _watched(transport: AbstractAsyncContextManager[Any], on_end: Callable[[], None],
                   screen: Callable[[Any], Any]) -> AsyncIterator[Any]:
    """The transport's streams, with a read stream that reports its end (how a crashed stdio server is noticed
    without a request in flight) and screens each message on its way in."""

    async def ended() -> None:
        on_end()

    async with transport as (read_stream, write_stream):
        yield WatchedReadStream(read_stream, on_item=screen, on_end=ended,
                                ends=(anyio.EndOfStream, anyio.ClosedResourceError)), write_stream
