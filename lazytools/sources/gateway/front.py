"""The gateway's side of the server: every upstream's prompts, resources and log levels under one server, and
what each client session's start and end mean for them. Each job is its own part: prompts.py, resources.py
(routing a URI), resource_subscriptions.py, log_levels.py; this front hands each request to its part.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import mcp_types as types

from ...errors import UnknownPromptError, UnknownResourceError
from ...origin import Clients, ClientSide
from .log_levels import LogLevels
from .prompts import Prompts
from .relay import Relay, deliver
from .resource_subscriptions import ResourceSubscriptions
from .resources import ResourceRoutes
from .scoped import SessionUpstreams
from .upstream import Upstream

__all__ = ["Front", "UnknownPromptError", "UnknownResourceError"]

logger = logging.getLogger(__name__)


class Front:
    """Every upstream's prompts and resources under one server, and the client sessions they reach."""

    def __init__(self, upstreams: list[Upstream], relay: Relay, scoped: SessionUpstreams | None = None,
                 levels: LogLevels | None = None) -> None:
        self.upstreams = upstreams
        self.relay = relay
        self.scoped = scoped
        self.prompts = Prompts(upstreams)
        self.resources = ResourceRoutes(upstreams)
        self.subscriptions = ResourceSubscriptions(self.resources, relay)
        self.levels = levels if levels is not None else LogLevels(upstreams, relay)

    def attach(self, clients: Clients) -> None:
        """The server's sessions: where upstream messages outside a call go."""
        self.relay.clients = clients

    async def offerings_changed(self, upstream: Upstream) -> None:
        """`upstream`'s prompts, resources or templates changed: every session is told to list them again."""
        self.prompts.changed()
        self.resources.changed()
        for client in self.relay.clients:
            await deliver(client, types.PromptListChangedNotification())
            await deliver(client, types.ResourceListChangedNotification())

    # -- prompts and completion ---------------------------------------------------------------------------------

    def list_prompts(self) -> list[types.Prompt]:
        return self.prompts.list()

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        return await self.prompts.get(name, arguments)

    def prompt_server(self, name: str) -> str | None:
        return self.prompts.server_of(name)

    async def complete(self, params: types.CompleteRequestParams) -> types.CompleteResult:
        """Argument completion for a prompt (by its public name) or a resource template, from its server."""
        ref = params.ref
        upstream: Upstream | None = None
        if isinstance(ref, types.PromptReference):
            upstream, prompt = self.prompts.find(ref.name)
            params = params.model_copy(update={"ref": ref.model_copy(update={"name": prompt.name})})
        else:
            upstream = next((u for u in self.upstreams for t in u.offerings.templates if t.uri_template == ref.uri),
                            None) or self.resources.upstream_for(ref.uri)
        if not upstream.completes:
            return types.CompleteResult(completion=types.Completion(values=[]))
        result: types.CompleteResult = await upstream.request(types.CompleteRequest(params=params),
                                                              types.CompleteResult, "completion/complete")
        return result

    # -- resources --------------------------------------------------------------------------------------------

    def list_resources(self) -> list[types.Resource]:
        return self.resources.list_resources()

    def list_templates(self) -> list[types.ResourceTemplate]:
        return self.resources.list_templates()

    def template_server(self, template: str) -> str | None:
        return self.resources.template_server(template)

    def upstream_for(self, uri: str) -> Upstream:
        return self.resources.upstream_for(uri)

    def uri_server(self, uri: str) -> str | None:
        return self.resources.uri_server(uri)

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        return await self.resources.read_resource(uri)

    async def subscribe(self, uri: str, client: ClientSide) -> None:
        await self.subscriptions.subscribe(uri, client)

    async def unsubscribe(self, uri: str, client: ClientSide) -> None:
        await self.subscriptions.unsubscribe(uri, client)

    def subscribed(self, key: str) -> set[str]:
        return self.subscriptions.subscribed(key)

    def check_updates(self, wanted: Callable[[str, str], Awaitable[bool]]) -> None:
        self.subscriptions.check_updates(wanted)

    # -- sessions ---------------------------------------------------------------------------------------------

    async def session_opened(self, client: ClientSide) -> None:
        """A client that can list roots is the one upstreams ask when it is the only session: tell them to ask."""
        await self.levels.apply()  # a session without a level wants everything
        caps = client.capabilities
        if caps is not None and caps.roots is not None and [c.key for c in self.relay.clients] == [client.key]:
            await self.roots_changed(client)

    def uri_memory(self, key: str) -> dict[str, list[str]]:
        """The URIs `key`'s calls and prompts named, by upstream: what a shared session record keeps of routing."""
        return {u.name: uris for u in self.upstreams if (uris := u.seen_uris.of(key))}

    def restore_uri_memory(self, key: str, memory: dict[str, list[str]]) -> None:
        """Routing for `key` as its shared record has it (the session may have named them on another replica)."""
        for upstream in self.upstreams:
            upstream.seen_uris.restore(key, memory.get(upstream.name, ()))

    async def session_closed(self, key: str) -> None:
        for upstream in self.upstreams:
            upstream.seen_uris.forget(key)
        for uri in self.subscriptions.subscribed(key):
            await self.subscriptions.leave(uri, key)
        await self.levels.forget(key)
        if self.scoped is not None:
            self.scoped.stop(key)

    async def roots_changed(self, client: ClientSide) -> None:
        """The client's roots changed: every upstream that may ask it hears `notifications/roots/list_changed`, once
        until it asks for them (relay.py, `RootsNotice`)."""
        own = self.scoped.of(client.key) if self.scoped is not None else []
        for upstream in [*self.upstreams, *own]:
            if upstream.asks.roots.tell():
                await upstream.notify(types.RootsListChangedNotification())

    async def set_level(self, client: ClientSide, level: types.LoggingLevel) -> None:
        """A session's `logging/setLevel` (log_levels.py)."""
        await self.levels.set(client.key, level, self.scoped.of(client.key) if self.scoped is not None else ())
