"""One upstream MCP server's connection, for its whole life: connect, list what it offers, follow its changes,
reconnect when it drops, stop with the gateway; what a reader sees of its health. How a connection is opened is
connect.py's; the requests sent on it, and what it asks and tells, are `Upstream`'s (upstream.py).

Each `run` is one task that owns the connection for its whole life (anyio wants a connection's task groups
entered and left by the same task): connect within `connect_timeout`, list tools, then wait for the upstream to
announce a tool-list change or for the connection to end; on failure, retry with backoff. Requests come from
other tasks (the server's request handlers) and share the connection (`_connected`).
"""

from __future__ import annotations

import logging
import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ...catalog import Catalog, Group
from ...errors import UpstreamUnavailableError
from ...settings import Settings
from .config import ServerConfig
from .connect import Screen, describe_failure, open_transport, refused_handshake, watched
from .offerings import Offerings, list_offerings
from .stderr import StderrTail, labelled_stderr
from .tools import about_of, list_tools, summary_of, tool_entries

__all__ = ["Backoff", "Lifecycle", "State"]

logger = logging.getLogger(__name__)

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


class Lifecycle(ABC):
    """The connection to one configured server and the catalog group it fills, kept up while the gateway runs."""

    def __init__(self, config: ServerConfig, *, catalog: Catalog, settings: Settings,
                 backoff: Backoff = Backoff(), chain: str = "", auth: httpx2.Auth | None = None) -> None:
        self.config = config
        self.auth = auth
        """Per-request credentials of an HTTP connection that serves one user (credentials.py); None when shared."""
        self.name = config.name
        self.catalog = catalog
        self.backoff = backoff
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
        # Besides tools (offerings.py): its prompts, resources and templates.
        self.offerings = Offerings()
        self.on_offerings_changed: Callable[[Any], Awaitable[None]] | None = None
        """Awaited with this upstream when its prompts, resources or templates changed (front.py)."""
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
                if self._mode == "legacy" and refused_handshake(exc):
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
            screen = Screen(self.name, keep=self.max_offerings + 1)  # one more: list_offerings then warns
            transport = open_transport(self.config, auth=self.auth, chain=self.chain, stderr=self._stderr,
                                       connect_timeout=self.connect_timeout, max_line_bytes=self.max_line_bytes)
            async with Client(watched(transport, self._connection_lost, screen), mode=self._mode,
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
        elif isinstance(message, types.PromptListChangedNotification | types.ResourceListChangedNotification):
            self._relist_offerings = True
            self._signal.set()
        elif isinstance(message, Exception):
            logger.debug("upstream %r: transport error: %s", self.name, message)
        else:
            await self._on_notification(message)

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

    async def _connected(self, within: float) -> Client:
        """The serving client; a connection that is down is woken and waited for, at most `within` seconds."""
        if self.state != "serving":
            # Down: wake the reconnect loop now ("on next use") and wait, within the caller's time budget, for
            # the first attempt that starts after this call: one spawn per call at most, never a retry storm.
            target = self._attempts_started + 1
            self._wake.set()
            with anyio.move_on_after(min(within, self.connect_timeout)):
                while not self.serving and self._attempts_over < target:
                    await self._attempt_over.wait()
        client = self._client
        if client is None or not self.serving:
            raise UpstreamUnavailableError(self.name, f"not connected ({self.error or 'starting'}); lazytools "
                                                      "keeps retrying in the background")
        return client

    # -- health ---------------------------------------------------------------------------------------------

    @property
    def completes(self) -> bool:
        """Whether the connected server declares completions (answers `completion/complete`)."""
        return self._client is not None and self._client.server_capabilities.completions is not None

    @property
    def logs(self) -> bool:
        """Whether the connected server declares logging (accepts `logging/setLevel`)."""
        return self._client is not None and self._client.server_capabilities.logging is not None

    # -- what the request side (upstream.py) answers ----------------------------------------------------------

    @abstractmethod
    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call one of its tools (the catalog entries' `call`)."""

    @abstractmethod
    async def _on_notification(self, message: Any) -> None:
        """A notification the connection itself does not act on (a log message, a resource update)."""

    @abstractmethod
    async def _sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any: ...

    @abstractmethod
    async def _elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any: ...

    @abstractmethod
    async def _list_roots(self, context: Any) -> Any: ...
