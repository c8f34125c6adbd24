"""The gateway's prompts and resources, and its side of each client session, as the server serves them.

Prompts are named like tools (`server__prompt`, same rules, so two servers never collide). Resources keep their
URIs, because tool results hold them (`resource_link`) and pass through unchanged: a URI is routed to the first
server in the config that lists it, has a template that matches it, or named it in a call or prompt result of the
same session (a later server cannot capture an earlier one's URIs by listing or templating them; what one session's
calls name never changes another session's routing). Nothing is guessed beyond that (no "the only server
using this scheme"). A server is never asked for a URI that its own excluded resources, excluded templates or
exclude patterns match, in any form the router or the server acts on (uris.py), whichever route led to it.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from ...errors import LazyToolsError, UnknownPromptError, UnknownResourceError
from ...origin import LOG_LEVELS, Clients, ClientSide, current_origin, session_key
from ...safetext import clip
from ...toolnames import public_tool_name, unique_name
from ...uris import UnsafeUriError, uri_forms
from .offerings import uris_in
from .relay import Relay
from .scoped import SessionUpstreams
from .upstream import Upstream

__all__ = ["Front", "UnknownPromptError", "UnknownResourceError"]

logger = logging.getLogger(__name__)



class Front:
    """Every upstream's prompts and resources under one server, and the client sessions they reach."""

    def __init__(self, upstreams: list[Upstream], relay: Relay, scoped: SessionUpstreams | None = None) -> None:
        self.upstreams = upstreams
        self.relay = relay
        self.scoped = scoped
        self._subscribers: dict[str, dict[str, Upstream]] = {}
        """By subscribed URI: the sessions subscribed, each with the connection its subscription went through (the
        session's own for `"scope": "session"`); only that connection's updates of that URI reach it."""
        self._by_session: dict[str, set[str]] = {}
        """The same subscriptions by session: what one session holds here."""
        self._wanted: Callable[[str, str], Awaitable[bool]] | None = None
        self._levels: dict[str, types.LoggingLevel] = {}
        self._upstream_level: types.LoggingLevel | None = None
        self._templates: dict[str, tuple[str, UriTemplate] | None] = {}
        """Parsed templates by their text, each with the literal text every URI it matches starts with."""
        self._hidden: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {}
        self._prompt_index: dict[str, tuple[Upstream, types.Prompt]] | None = None
        """Prompts by public name, built on first use after a change: a look-up is one dict access, not a walk of
        every upstream's prompts on the event loop."""
        self._resource_index: dict[str, Upstream] | None = None
        """Listed resources by URI, the first server in the config keeping a URI listed twice."""
        for upstream in upstreams:
            upstream.on_offerings_changed = self._offerings_changed
            upstream.on_resource_updated = self._resource_updated
            upstream.wanted_level = self._shared_level  # a reconnected upstream gets the level again
        if scoped is not None:
            scoped.level_of = self._levels.get  # a session's own connections get its level, from the start

    def attach(self, clients: Clients) -> None:
        """The server's sessions: where upstream messages outside a call go."""
        self.relay.clients = clients

    # -- prompts --------------------------------------------------------------------------------------------------

    def _prompts(self) -> dict[str, tuple[Upstream, types.Prompt]]:
        if self._prompt_index is None:
            index: dict[str, tuple[Upstream, types.Prompt]] = {}
            for upstream in self.upstreams:
                for prompt in upstream.offerings.prompts:
                    name = unique_name(public_tool_name(upstream.config.tool_prefix, prompt.name), index, "-")
                    index[name] = (upstream, prompt)
            self._prompt_index = index
        return self._prompt_index

    def list_prompts(self) -> list[types.Prompt]:
        return [prompt.model_copy(update={"name": name}) for name, (_, prompt) in self._prompts().items()]

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        found = self._prompts().get(name)
        if found is None:
            raise UnknownPromptError(name)
        upstream, prompt = found
        request = types.GetPromptRequest(params=types.GetPromptRequestParams(name=prompt.name, arguments=arguments))
        result: types.GetPromptResult = await upstream.request(request, types.GetPromptResult,
                                                               f"prompt {prompt.name!r}")
        upstream.seen_uris.add(session_key(current_origin()), uris_in(result))
        return result

    def prompt_server(self, name: str) -> str | None:
        """The server of the prompt with public name `name`, if any."""
        found = self._prompts().get(name)
        return found[0].name if found is not None else None

    async def complete(self, params: types.CompleteRequestParams) -> types.CompleteResult:
        """Argument completion for a prompt (by its public name) or a resource template, from its server."""
        ref = params.ref
        upstream: Upstream | None = None
        if isinstance(ref, types.PromptReference):
            found = self._prompts().get(ref.name)
            if found is None:
                raise UnknownPromptError(ref.name)
            upstream, prompt = found
            params = params.model_copy(update={"ref": ref.model_copy(update={"name": prompt.name})})
        else:
            upstream = next((u for u in self.upstreams for t in u.offerings.templates if t.uri_template == ref.uri),
                            None) or self.upstream_for(ref.uri)
        if not upstream.completes:
            return types.CompleteResult(completion=types.Completion(values=[]))
        result: types.CompleteResult = await upstream.request(types.CompleteRequest(params=params),
                                                              types.CompleteResult, "completion/complete")
        return result

    # -- resources ------------------------------------------------------------------------------------------------

    def _resources(self) -> dict[str, Upstream]:
        if self._resource_index is None:
            index: dict[str, Upstream] = {}
            for upstream in self.upstreams:
                for resource in upstream.offerings.resources:
                    if resource.uri in index:
                        logger.info("resource %s of %r is listed by an earlier server too; not listed twice",
                                    clip(resource.uri), upstream.name)
                        continue
                    index[resource.uri] = upstream
            self._resource_index = index
        return self._resource_index

    def list_resources(self) -> list[types.Resource]:
        """Each server's listed resources but those its exclusions keep out (in any form) and those an earlier
        server in the config claims (lists, serves by a template, or named in this session's results): a read of
        such a URI goes to the earlier server, so it is not listed as the later one's."""
        seen: set[str] = set()
        listed: list[types.Resource] = []
        session = session_key(current_origin())
        for index, upstream in enumerate(self.upstreams):
            for resource in upstream.offerings.resources:
                if resource.uri in seen:
                    logger.info("resource %s of %r is listed by an earlier server too; not listed twice",
                                clip(resource.uri), upstream.name)
                    continue
                if self._blocked(upstream, resource.uri):  # its exclusions keep it out in another form
                    continue
                earlier = next((u for u in self.upstreams[:index] if self._templated(u, resource.uri)
                                or (u.seen_uris.named(session, resource.uri) and not self._blocked(u, resource.uri))),
                               None)
                if earlier is not None:
                    logger.debug("resource %s of %r is served by %r, earlier in the config; not listed",
                                 clip(resource.uri), upstream.name, earlier.name)
                    continue
                seen.add(resource.uri)
                listed.append(resource)
        return listed

    def template_server(self, template: str) -> str | None:
        """The server that lists resource template `template` (the first in the config), if any."""
        return next((u.name for u in self.upstreams for t in u.offerings.templates if t.uri_template == template),
                    None)

    def list_templates(self) -> list[types.ResourceTemplate]:
        return [template for upstream in self.upstreams for template in upstream.offerings.templates]

    def _template(self, text: str) -> tuple[str, UriTemplate] | None:
        if text not in self._templates:
            try:
                # The template's literal start (up to its first expression, query or fragment) is compared exactly
                # by the SDK's match, so a URI without it is passed over without running the match.
                self._templates[text] = (re.split(r"[{?#]", text, maxsplit=1)[0], UriTemplate.parse(text))
            except (InvalidUriTemplate, ValueError):
                self._templates[text] = None
        return self._templates[text]

    def _matches(self, templates: tuple[str, ...], uri: str) -> bool:
        for text in templates:
            parsed = self._template(text)
            if parsed is not None and uri.startswith(parsed[0]) and parsed[1].match(uri) is not None:
                return True
        return False

    def _blocked(self, upstream: Upstream, uri: str) -> bool:
        """Whether `upstream`'s config keeps `uri` out: a resource it listed under an excluded name, a URI an
        exclude pattern matches, or one an excluded template of it matches, in any form the router or the server
        acts on (uris.py); a URI that cannot be normalised safely is kept from a server that has exclusions."""
        offerings = upstream.offerings
        if not (upstream.config.exclude or offerings.hidden or offerings.hidden_templates):
            return False  # nothing to bypass
        try:
            forms = uri_forms(uri)
        except UnsafeUriError as exc:
            logger.debug("resource %.200r kept from %r: %s", uri, upstream.name, exc)
            return True
        folded = [form.lower() for form in forms]  # exclusions deny: any case variant of a match is kept out
        patterns = [pattern.lower() for pattern in upstream.config.exclude]
        if any(fnmatch.fnmatchcase(f, pattern) for pattern in patterns for f in folded):
            return True
        if not self._hidden_forms(upstream).isdisjoint(folded):
            return True
        return any(self._matches(offerings.hidden_templates, form) for form in forms)

    def _hidden_forms(self, upstream: Upstream) -> frozenset[str]:
        """Every form of the URIs `upstream` listed under excluded names, computed once per listing."""
        hidden = upstream.offerings.hidden
        cached = self._hidden.get(upstream.name)
        if cached is None or cached[0] is not hidden:
            forms: set[str] = set()
            for listed in hidden:
                try:
                    forms.update(form.lower() for form in uri_forms(listed))
                except UnsafeUriError:
                    forms.add(listed.lower())
            cached = self._hidden[upstream.name] = (hidden, frozenset(forms))
        return cached[1]

    def _templated(self, upstream: Upstream, uri: str) -> bool:
        """Whether one of `upstream`'s templates serves `uri` (and its config does not keep `uri` out)."""
        return (self._matches(tuple(t.uri_template for t in upstream.offerings.templates), uri)
                and not self._blocked(upstream, uri))

    def upstream_for(self, uri: str) -> Upstream:
        """The upstream that serves `uri` for the session being served (see the module's docstring for the
        order); servers whose config keeps `uri` out are never chosen."""
        candidates = [u for u in self.upstreams if not self._blocked(u, uri)]
        lister = self._resources().get(uri)
        session = session_key(current_origin())
        # First in the config wins, whether it lists the URI, templates it or named it in this session's results:
        # a later server's listing or catch-all template never takes a URI an earlier server handed out.
        for upstream in candidates:
            lists = lister is upstream or (lister is not None and lister not in candidates
                                           and any(resource.uri == uri for resource in upstream.offerings.resources))
            if (lists or self._matches(tuple(t.uri_template for t in upstream.offerings.templates), uri)
                    or upstream.seen_uris.named(session, uri)):
                return upstream
        raise UnknownResourceError(uri)

    def uri_server(self, uri: str) -> str | None:
        """The server `uri` would be read from now, if any."""
        try:
            return self.upstream_for(uri).name
        except UnknownResourceError:
            return None

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        upstream = self.upstream_for(uri)
        request = types.ReadResourceRequest(params=types.ReadResourceRequestParams(uri=uri))
        result: types.ReadResourceResult = await upstream.request(request, types.ReadResourceResult,
                                                                  f"resource {clip(uri)!r}")
        return result

    async def subscribe(self, uri: str, client: ClientSide) -> None:
        upstream = self.upstream_for(uri)
        if not upstream.offerings.subscribe:
            raise LazyToolsError(f"Upstream server {upstream.name!r} does not offer resource subscriptions")
        # The connection that serves this session: its own for `"scope": "session"`, else the shared one.
        per_session = upstream.per_session
        connection = await per_session(upstream, client.key) if per_session is not None else upstream
        keys = self._subscribers.get(uri, {})
        if keys.get(client.key) is connection:
            return
        if client.key in keys:  # the URI moved to another server since: leave the old subscription first
            await self.unsubscribe(uri, client)
            keys = self._subscribers.get(uri, {})
        if not any(other is connection for other in keys.values()):  # one upstream subscription per connection
            await connection.request(types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)),
                                     types.EmptyResult, f"subscribing to {uri!r}")
        self._subscribers.setdefault(uri, {})[client.key] = connection
        self._by_session.setdefault(client.key, set()).add(uri)

    async def unsubscribe(self, uri: str, client: ClientSide) -> None:
        keys = self._subscribers.get(uri)
        if keys is None or client.key not in keys:
            return
        connection = keys.pop(client.key)
        if not keys:
            del self._subscribers[uri]
        held = self._by_session.get(client.key)
        if held is not None:
            held.discard(uri)
            if not held:
                del self._by_session[client.key]
        if not any(other is connection for other in keys.values()):
            await connection.request(types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri)),
                                     types.EmptyResult, f"unsubscribing from {uri!r}")

    async def _resource_updated(self, upstream: Upstream, uri: str) -> None:
        """An update reaches only the sessions whose subscription to `uri` went through this very connection:
        not another session of a per-session server, not a session subscribed to another server's URI."""
        note = types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))
        keys = [key for key, connection in self._subscribers.get(uri, {}).items() if connection is upstream]
        if not keys:
            logger.debug("upstream %r announced an update of %.200r, which no session subscribed to through it",
                         upstream.name, uri)
        for key in keys:
            if self._wanted is not None and not await self._wanted(key, uri):
                # Shared sessions: the session unsubscribed on another replica, or ended there. Dropped here now.
                await self._leave(uri, key)
                continue
            client = self.relay.clients.get(key)
            if client is not None:
                await _deliver(client, note)

    def subscribed(self, key: str) -> set[str]:
        """The URIs session `key` is subscribed to through this process's connections."""
        return set(self._by_session.get(key, ()))

    def check_updates(self, wanted: Callable[[str, str], Awaitable[bool]]) -> None:
        """Ask `wanted(key, uri)` before an update reaches a session (shared sessions: whether the session's record
        still holds the subscription); a session that no longer wants it is unsubscribed here."""
        self._wanted = wanted

    async def _leave(self, uri: str, key: str) -> None:
        try:
            await self.unsubscribe(uri, _Gone(key))
        except Exception as exc:  # the upstream may be gone too
            logger.debug("unsubscribing %.200r for session %s failed: %s", uri, key[:8], exc)

    async def _offerings_changed(self, upstream: Upstream) -> None:
        self._templates.clear()
        self._prompt_index = self._resource_index = None
        for client in self.relay.clients:
            await _deliver(client, types.PromptListChangedNotification())
            await _deliver(client, types.ResourceListChangedNotification())

    # -- sessions -------------------------------------------------------------------------------------------------

    async def session_opened(self, client: ClientSide) -> None:
        """A client that can list roots is the one upstreams ask when it is the only session: tell them to ask."""
        await self._apply_levels()  # a session without a level wants everything
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
        for uri in self.subscribed(key):
            await self._leave(uri, key)
        self._levels.pop(key, None)
        await self._apply_levels(gone=key)
        if self.scoped is not None:
            self.scoped.stop(key)

    async def roots_changed(self, client: ClientSide) -> None:
        """The client's roots changed: every upstream that may ask it hears `notifications/roots/list_changed`."""
        own = self.scoped.of(client.key) if self.scoped is not None else []
        for upstream in [*self.upstreams, *own]:
            await upstream.notify(types.RootsListChangedNotification())

    async def set_level(self, client: ClientSide, level: types.LoggingLevel) -> None:
        """A session's `logging/setLevel`: the session is filtered at its level, shared upstreams are asked for the
        most verbose level any session wants (a session that set none wants everything: `debug`), and the
        session's own connections (`"scope": "session"`) for its level: their logs reach no other session."""
        self._levels[client.key] = level
        await self._apply_levels()
        for own in self.scoped.of(client.key) if self.scoped is not None else []:
            await _send_level(own, level)

    def _shared_level(self) -> types.LoggingLevel | None:
        return self._upstream_level

    async def _apply_levels(self, gone: str | None = None) -> None:
        if not self._levels:
            return  # no session ever asked: upstreams keep their own default
        keys = {c.key for c in self.relay.clients if c.key != gone} | set(self._levels)
        lowest = min((self._levels.get(key, "debug") for key in keys), key=LOG_LEVELS.index, default=None)
        if lowest is None or lowest == self._upstream_level:
            return
        self._upstream_level = lowest
        for upstream in self.upstreams:
            await _send_level(upstream, lowest)


async def _send_level(upstream: Upstream, level: types.LoggingLevel) -> None:
    if not upstream.logs:
        return
    try:
        # No progressToken: setLevel is not a call that reports progress.
        await upstream.request(types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)),
                               types.EmptyResult, "logging/setLevel", progress=False)
    except LazyToolsError as exc:
        logger.info("upstream %r: setting its log level failed: %s", upstream.name, exc)


async def _deliver(client: ClientSide, notification: types.ServerNotification) -> None:
    try:
        await client.notify(notification)
    except Exception as exc:  # a client that went away must not keep the others from hearing
        logger.debug("session %s: notification not delivered: %s", client.key[:8], exc)


class _Gone:
    """A session that has ended, known only by its key."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.capabilities: types.ClientCapabilities | None = None

    def wants_log(self, level: types.LoggingLevel) -> bool:
        return False

    async def notify(self, notification: types.ServerNotification) -> None:
        return None

    async def request(self, request: types.ServerRequest, result_type: type[Any]) -> Any:
        raise LazyToolsError("the session has ended")
