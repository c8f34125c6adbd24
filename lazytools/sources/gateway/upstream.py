"""One upstream MCP server as the gateway uses it, for its whole life: connect, list what it offers, follow its
changes, reconnect when it drops (lifecycle.py), stop with the gateway; the requests sent to it for clients (calls,
prompts, reads, completions, notifications), each with its deadline, progress and errors in lazytools' terms; and
what the server asks and tells while it serves one (relay.py). How a connection is opened is connect.py's.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from pydantic import ValidationError

from ...catalog import Catalog, Group
from ...errors import UpstreamError, UpstreamTimeoutError, UpstreamUnavailableError
from ...origin import current_origin, session_key
from ...settings import Settings
from .bounds import ProgressGate, clip_text
from .config import HttpServer, ServerConfig
from .connect import Screen, describe_failure, open_transport, refused_handshake, watched
from .lifecycle import Attempts, Backoff, State
from .offerings import NamedUris, Offerings, list_offerings, uris_in
from .relay import ClientAsks, Inflight, Relay
from .stderr import StderrTail, labelled_stderr
from .tools import about_of, list_tools, summary_of, tool_entries

__all__ = ["Hooks", "Upstream"]

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer("lazytools")

_CLIENT_INFO = types.Implementation(name="lazytools-gateway", version="0.1")


@dataclass(frozen=True, slots=True)
class Hooks:
    """Where an upstream's requests go instead of its own connection, and whom it tells what (the front, front.py),
    given when it is built."""

    per_session: Callable[[Upstream, str], Awaitable[Upstream]] | None = None
    """For `"scope": "session"` servers: the connection of a session, which serves its requests."""
    per_user: Callable[[Upstream], Awaitable[Upstream]] | None = None
    """For servers with `identity`: the connection carrying the current user's credentials."""
    offerings_changed: Callable[[Upstream], Awaitable[None]] | None = None
    """Awaited with the upstream when its prompts, resources or templates changed."""
    resource_updated: Callable[[Upstream, str], Awaitable[None]] | None = None
    wanted_level: Callable[[], types.LoggingLevel | None] | None = None
    """The log level its clients asked for, sent on each connection before it serves; None: none."""


class Upstream:
    """One configured server: its connection, kept up while the gateway runs, the catalog group it fills, and the
    requests clients send through it. Everything it tells or routes to is given when it is built."""

    def __init__(self, config: ServerConfig, *, catalog: Catalog, settings: Settings,
                 backoff: Backoff = Backoff(), chain: str = "", relay: Relay | None = None,
                 owner: str | None = None, auth: httpx2.Auth | None = None, hooks: Hooks | None = None) -> None:
        self.config = config
        self.name = config.name
        self.catalog = catalog
        self.backoff = backoff
        self.chain = chain
        self.auth = auth
        """Per-request credentials of an HTTP connection that serves one user (credentials.py); None when shared."""
        self.connect_timeout = settings.connect_timeout
        self.call_timeout = config.timeout or settings.call_timeout
        self.call_ceiling = max(settings.call_timeout_ceiling, self.call_timeout)
        self.max_offerings = settings.max_upstream_offerings
        self.max_line_bytes = 2 * settings.max_result_bytes + 1024 * 1024
        """Longest message read from a stdio upstream: a result up to the limit, JSON escapes, the envelope."""
        self.pinned = config.defer_loading is False or (config.defer_loading is None and not settings.defer_all)
        self.hooks = hooks if hooks is not None else Hooks()
        # The client side (relay.py): requests in flight, where their messages go, a session that owns it.
        self.inflight = Inflight()
        """The client requests this upstream serves now: where its messages go when nothing else says."""
        self.relay = relay if relay is not None else Relay()
        self.owner = owner
        """The session key of the client this upstream was started for (`"scope": "session"`); None when shared."""
        self.asks = ClientAsks(self.relay, self.name, self.inflight, owner)
        self.seen_uris = NamedUris()
        """URIs its results named, per client session (resources/read routes them for that session only)."""
        # What a reader of the gateway sees.
        self.state: State = "connecting"
        self.error: str | None = None
        """Why the last attempt failed or the connection ended; None while serving."""
        self.connections = 0
        self.offerings = Offerings()
        """Besides tools (offerings.py): its prompts, resources and templates."""
        self._attempts = Attempts()
        self.started = self._attempts.first_over
        """Set when the first attempt is over, whether it connected or not."""
        # The current connection: its client (set exactly while `serving`), when it came up, and what `_serve`
        # waits on (`_signal`, with `_relist` saying the tool list changed).
        self._client: Client | None = None
        self._mode = "legacy"
        """The handshake era first: every server speaks it but those that are 2026-07-28 only."""
        self._up_since: float | None = None
        self._signal = anyio.Event()
        self._relist = False
        self._relist_offerings = False
        self._stderr: TextIO = sys.stderr  # a pipe to labelled log lines while `run` runs
        self._stderr_tail = StderrTail()
        self._said: set[str] = set()  # its listing's warnings already logged: each reconnection lists it again

    @property
    def serving(self) -> bool:
        """Whether calls can go through now (`state` is read afresh: it changes across awaits)."""
        return self.state == "serving"

    @property
    def completes(self) -> bool:
        """Whether the connected server declares completions (answers `completion/complete`)."""
        return self._client is not None and self._client.server_capabilities.completions is not None

    @property
    def logs(self) -> bool:
        """Whether the connected server declares logging (accepts `logging/setLevel`)."""
        return self._client is not None and self._client.server_capabilities.logging is not None

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
            self._attempts.begin()
            self._stderr_tail.lines.clear()  # what this attempt's process says, not the last one's
            try:
                await self._connect_and_serve()
                reason = "the connection closed (the server exited or crashed)"
            except Exception as exc:  # any failure of one upstream is its own, never the gateway's
                if self._mode == "legacy" and refused_handshake(exc):
                    logger.info("upstream %r refuses the initialize handshake; connecting in the 2026 era", self.name)
                    self._mode = "auto"
                    self._attempts.again()
                    continue
                reason = describe_failure(exc, cwd=getattr(self.config, "cwd", None),
                                          command=getattr(self.config, "command", None))
            stayed_up = self._up_since is not None and anyio.current_time() - self._up_since >= self.backoff.stable
            failures = 0 if stayed_up else failures + 1
            said = await self._stderr_tail.settled() if failures <= 1 else ""  # the warnings, not the retries
            self._went_down(reason, failures, said)
            if failures:
                await self._attempts.pause(self.backoff.after(failures))  # a call to one of its tools retries now

    async def _connect_and_serve(self) -> None:
        self.state, self._relist, self._up_since, self.asks.roots.told = "connecting", False, None, False
        self._signal = anyio.Event()
        # The deadline covers start-up, initialize and the first tools/list, then is lifted for the session.
        with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as scope:
            screen = Screen(self.name, keep=self.max_offerings + 1)  # one more: list_offerings then warns
            transport = open_transport(self.config, auth=self.auth, chain=self.chain, stderr=self._stderr,
                                       connect_timeout=self.connect_timeout, max_line_bytes=self.max_line_bytes)
            async with Client(watched(transport, self._connection_lost, screen), mode=self._mode,
                              cache=None, client_info=_CLIENT_INFO, message_handler=self._on_message,
                              # Declared to every upstream, so it shows the tools that need them; each request
                              # goes to the client whose call is in flight, or fails with why (relay.py).
                              sampling_callback=self.asks.sampling, elicitation_callback=self.asks.elicitation,
                              list_roots_callback=self.asks.list_roots) as client:
                screen.version = client.protocol_version
                await self._refresh(client)
                await self._refresh_offerings(client)
                # A new connection (a reconnection, a session's own) gets the level already asked for.
                await _send_level(client, self.name, self.hooks.wanted_level)
                scope.deadline = math.inf
                self._came_up(client)
                try:
                    async with anyio.create_task_group() as tg:
                        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                            tg.start_soon(_listen, client, self.name, self._tools_changed)  # 2026-07-28: on a stream
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

    def _came_up(self, client: Client) -> None:
        self._client = client
        self._up_since = anyio.current_time()
        self.connections += 1
        if self.state == "connecting":  # not if its stream already ended: `_serve` then returns at once
            self.state = "serving"
        self.error = None
        self.catalog.set_not_serving(self.name, None)
        tools = len(self.catalog.in_group(self.name))
        logger.log(logging.INFO if self.connections == 1 else logging.WARNING, "upstream %r: %s, %d tool%s", self.name,
                   "connected" if self.connections == 1 else "reconnected", tools, "" if tools == 1 else "s")
        self._attempts.end()

    def _went_down(self, reason: str, failures: int, said: str = "") -> None:
        first_failure = not self.started.is_set()
        came_up = not self._attempts.open  # this attempt connected, then dropped
        # The model is not told the server's stderr (it may print a key, or orders): the log and `error` hold it.
        self.catalog.set_not_serving(self.name, reason, f"{self.config.tool_prefix}__")
        self.state, self.error = "failed", reason + (f" (its stderr ended with: {said})" if said else "")
        retry = f"retrying in {self.backoff.after(failures):g} s" if failures else "reconnecting"
        verb = "failed to start" if first_failure else ("disconnected" if came_up else "is down")
        logger.log(logging.WARNING if failures <= 1 else logging.INFO, "upstream %r %s: %s; %s", self.name, verb,
                   self.error, retry)
        if not came_up:
            self._attempts.end()

    def _tools_changed(self) -> None:
        self._relist = True
        self._signal.set()

    def _connection_lost(self) -> None:
        if self.state in ("connecting", "serving"):
            self.state = "failed"
        self._signal.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed()
        elif isinstance(message, types.PromptListChangedNotification | types.ResourceListChangedNotification):
            self._relist_offerings = True
            self._signal.set()
        elif isinstance(message, types.LoggingMessageNotification):
            await self.relay.log(self.name, self.inflight, self.owner, message.params)
        elif isinstance(message, types.ResourceUpdatedNotification) and self.hooks.resource_updated is not None:
            await self.hooks.resource_updated(self, str(message.params.uri))
        elif isinstance(message, Exception):
            logger.debug("upstream %r: transport error: %s", self.name, message)

    async def _refresh(self, client: Client) -> None:
        """List the upstream's tools and replace this server's catalog group if anything changed."""
        tools = await list_tools(client)
        group = Group(self.name, summary_of(self.config, client), about=about_of(self.config, client))
        entries = tool_entries(self.name, self.config, tools, call=self.call, pinned=self.pinned, said=self._said)
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
            if self.hooks.offerings_changed is not None:
                await self.hooks.offerings_changed(self)

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
        if self.hooks.per_user is not None:
            own = await self.hooks.per_user(self)
            return await own.request(request, result_type, what, progress=progress)
        origin = current_origin()
        if self.hooks.per_session is not None and origin is not None and origin.client is not None:
            own = await self.hooks.per_session(self, origin.client.key)
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

            with _mapped_errors(self.name, what, session_bound=isinstance(self.config, HttpServer),
                                lost=lambda: self._lost(client)), self.inflight.serving(origin):
                return await _exchange(client, self.name, request, result_type, on_progress if progress else None)
        if anyio.current_time() >= ceiling:
            raise UpstreamTimeoutError(self.name, f"{what} ran past the ceiling of {self.call_ceiling:g} s "
                                                  "(the call was cancelled)")
        raise UpstreamTimeoutError(self.name, f"{what} did not answer within {self.call_timeout:g} s "
                                              "(the call was cancelled)")

    async def _connected(self, within: float) -> Client:
        """The serving client; a connection that is down is woken and waited for, at most `within` seconds."""
        if self.state != "serving":
            await self._attempts.fresh(min(within, self.connect_timeout), lambda: self.serving)
        client = self._client
        if client is None or not self.serving:
            raise UpstreamUnavailableError(self.name, f"not connected ({self.error or 'starting'}); lazytools "
                                                      "keeps retrying in the background")
        return client

    async def notify(self, notification: types.ClientNotification) -> None:
        """Send a notification if connected (a server that is down hears nothing; it asks again when up)."""
        client = self._client
        if client is not None and self.serving:
            await client.session.send_notification(notification)

    def _lost(self, client: Client) -> None:
        if self._client is client:  # not a late answer from a connection already replaced
            self._connection_lost()


class _SessionLostError(UpstreamUnavailableError):
    """An HTTP upstream answered that it does not know the connection's session: the request was not run."""


def _session_lost(exc: MCPError) -> bool:
    """Whether `exc` is an HTTP server's 404 for an unknown session (the SDK's server says `Session not found`,
    the SDK's client `Session terminated` when the 404 has no JSON-RPC body)."""
    message = exc.error.message.lower()
    return exc.code == types.INVALID_REQUEST and message.startswith("session") and (
        "not found" in message or "terminated" in message)


@contextmanager
def _mapped_errors(name: str, what: str, *, session_bound: bool, lost: Callable[[], None]) -> Iterator[None]:
    """The SDK's errors for request `what` to upstream `name`, as lazytools' own: the one place they are mapped.
    `lost` hears of an error that leaves the connection useless; `session_bound`: an HTTP connection, whose
    session the server may no longer know."""
    try:
        yield
    except MCPError as exc:
        # -32000 is also the first code JSON-RPC leaves to servers: only the SDK's own outcome means the connection.
        if exc.code == CONNECTION_CLOSED and exc.error.message == "Connection closed" and exc.error.data is None:
            lost()
            raise UpstreamUnavailableError(name, f"the connection closed during {what} (the server exited or "
                                                 "crashed); reconnecting") from exc
        if session_bound and _session_lost(exc):
            # An HTTP server that restarted (or expired the session) answers 404 to every request of the old
            # session: this connection is useless, reconnect (a new session).
            lost()
            raise _SessionLostError(name, f"the server no longer knows this connection's session "
                                          f"({clip_text(exc.error.message)}); reconnecting") from exc
        # An upstream's error message is cut as its progress and log text are: megabytes of it are no answer.
        raise UpstreamError(name, f"{what} failed with error {exc.code}: {clip_text(exc.error.message)}") from exc
    except ValidationError as exc:
        raise UpstreamError(name, f"{what} returned a malformed result: "
                                  f"{exc.errors()[0]['msg'] if exc.errors() else exc}") from exc
    except ValueError as exc:
        # The SDK's client checks a result by serialising it, and pydantic stops at its depth limit: structured
        # content nested a few hundred levels deep parses but cannot be checked (nor sent on). The upstream's fault.
        raise UpstreamError(name, f"{what} returned a result lazytools cannot read: {clip_text(str(exc))}") from exc


async def _exchange(client: Client, name: str, request: types.ClientRequest, result_type: type[Any],
                    on_progress: ProgressFnT | None) -> Any:
    """One request to upstream `name` and its answer, in a span of its own: inside it the SDK's client span puts
    the trace context in `_meta` (traceparent), so the upstream's own spans join the caller's trace."""
    with _tracer.start_as_current_span(f"lazytools upstream {name}", kind=SpanKind.CLIENT,
                                       attributes={"lazytools.upstream": name, "mcp.method.name": request.method}):
        # send_request, not call_tool: the client's own output-schema check would rewrite or reject results; a
        # gateway passes them on as they are and lets the end client judge.
        return await client.session.send_request(request, result_type, progress_callback=on_progress)


async def _listen(client: Client, name: str, changed: Callable[[], None]) -> None:
    """Follow a 2026-07-28 upstream's tool list changes, which come on a listen stream."""
    try:
        async with client.listen(tools_list_changed=True) as subscription:
            async for _event in subscription:
                changed()
    except Exception as exc:  # its tools still work; only their changes go unnoticed until a reconnection
        logger.warning("upstream %r: cannot follow tool list changes: %s", name, describe_failure(exc))


async def _send_level(client: Client, name: str, wanted: Callable[[], types.LoggingLevel | None] | None) -> None:
    """Ask a fresh connection for the level its clients want, if any and if it logs; the front sends later
    changes."""
    level = wanted() if wanted is not None else None
    if level is None or client.server_capabilities.logging is None:
        return
    try:
        await client.session.send_request(types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)),
                                          types.EmptyResult)
    except Exception as exc:  # its tools still serve, at its own default level
        logger.info("upstream %r: setting its log level failed: %s", name, describe_failure(exc))
