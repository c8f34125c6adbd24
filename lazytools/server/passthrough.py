"""The server's side of passing upstream features through: what it needs from a front of upstream servers, each
session as upstreams see it, and each request's origin (its progress, its own channel for logs and requests to the
client), set once per request by `OriginMiddleware` (middleware/origin.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar, runtime_checkable

import mcp_types as types
from mcp.server.connection import Connection, allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

from ..audit import note_reason, reason_of
from ..entry import compact_json
from ..errors import LazyToolsError, UnknownPromptError, UnknownResourceError
from ..identity import Principal, current_principal
from ..origin import LOG_LEVELS, CallOrigin, Clients, ClientSide
from ..state.sessions import SessionState, SessionStore
from .access import Access
from .surface import is_stateless_era

__all__ = ["FORWARDED", "PAGE_CHARS", "PAGE_ITEMS", "RESOURCE_NOT_FOUND", "PassThrough", "SessionClient",
           "SessionClients", "SessionOf", "UpstreamFeatures", "origin_of"]

RESOURCE_NOT_FOUND = -32002
"""The spec's error code for resources/read of an unknown URI."""

FORWARDED = frozenset({"tools/call", "prompts/get", "completion/complete", "resources/read", "resources/subscribe",
                       "resources/unsubscribe", "resources/list"})
"""The requests that run as their origin: those an upstream may serve, and resources/list, which what this
session's results named shapes."""

PAGE_ITEMS = 500
"""Prompts, resources or templates one page of a list holds; its `nextCursor` leads to the next. Sent in one answer,
the 10,000 resources of an ordinary file server were 1.9 MB, which the SDK client over HTTP refused (its 1 MiB event):
that session could list no resource at all."""
PAGE_CHARS = 256_000
"""A page also ends before its items pass about this many characters of JSON; an item alone larger than that is left
out (it would make its page too large to be read, and no page after it could be asked for)."""

SessionOf = Callable[[ServerRequestContext[Any, Any]], SessionState | None]

_Item = TypeVar("_Item", types.Prompt, types.Resource, types.ResourceTemplate)


def _page(items: Sequence[_Item], params: Any) -> tuple[list[_Item], str | None]:
    """The page of `items` that the request's cursor names (the first without one), and the cursor of the next
    (None after the last). A cursor is the index the page starts at, as text."""
    cursor = getattr(params, "cursor", None)
    if cursor is None:
        start = 0
    elif cursor.isdecimal() and len(cursor) <= 9:
        start = int(cursor)
    else:
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor: use the nextCursor of the page before")
    page: list[_Item] = []
    size, end = 0, start
    while end < len(items) and len(page) < PAGE_ITEMS:
        chars = len(compact_json(items[end].model_dump(mode="json", by_alias=True, exclude_none=True)))
        if page and size + chars > PAGE_CHARS:
            break
        end += 1
        if chars <= PAGE_CHARS:
            page.append(items[end - 1])
            size += chars
    return page, str(end) if end < len(items) else None


class UpstreamStatus(Protocol):
    """What the server's metrics read of one upstream server."""

    @property
    def name(self) -> str: ...

    @property
    def serving(self) -> bool: ...

    @property
    def connections(self) -> int: ...


@runtime_checkable
class UpstreamFeatures(Protocol):
    """What the server serves of upstream servers besides their tools (a source may expose one as `front`;
    `sources/gateway/front.py` is the one): prompts, completions, resources and their subscriptions, and what
    upstreams hear of client sessions (their opening and closing, log levels, roots changes)."""

    def attach(self, clients: Clients) -> None:
        """The server's sessions: where upstream messages outside a request go."""
        ...

    def list_prompts(self) -> list[types.Prompt]: ...

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult: ...

    async def complete(self, params: types.CompleteRequestParams) -> types.CompleteResult: ...

    def list_resources(self) -> list[types.Resource]: ...

    def list_templates(self) -> list[types.ResourceTemplate]: ...

    async def read_resource(self, uri: str) -> types.ReadResourceResult: ...

    async def subscribe(self, uri: str, client: ClientSide) -> None: ...

    async def unsubscribe(self, uri: str, client: ClientSide) -> None: ...

    def subscribed(self, key: str) -> set[str]:
        """The URIs session `key` is subscribed to through this process's upstream connections."""
        ...

    def check_updates(self, wanted: Callable[[str, str], Awaitable[bool]]) -> None:
        """Have `wanted(key, uri)` confirm each `resources/updated` before it reaches a session (shared sessions)."""
        ...

    async def set_level(self, client: ClientSide, level: types.LoggingLevel) -> None: ...

    async def roots_changed(self, client: ClientSide) -> None: ...

    async def session_opened(self, client: ClientSide) -> None: ...

    async def session_closed(self, key: str) -> None: ...

    def prompt_server(self, name: str) -> str | None:
        """The upstream server that serves the prompt `name` (for the audit trail), if any."""
        ...

    def uri_server(self, uri: str) -> str | None:
        """The upstream server `uri` would be read from (for the audit trail), if any."""
        ...

    def template_server(self, template: str) -> str | None:
        """The upstream server that lists resource template `template` (for the policy), if any."""
        ...

    def uri_memory(self, key: str) -> dict[str, list[str]]:
        """The URIs session `key`'s results named, by upstream (kept in a shared session record)."""
        ...

    def restore_uri_memory(self, key: str, memory: dict[str, list[str]]) -> None:
        """Routing for session `key` as its shared record has it."""
        ...

    @property
    def upstreams(self) -> Sequence[UpstreamStatus]: ...


class SessionClient:
    """One handshake-era session's client, over its connection's standalone channel."""

    def __init__(self, key: str, connection: Connection) -> None:
        self.key = key
        self._connection = connection
        self.level: types.LoggingLevel | None = None
        """Set by the client's `logging/setLevel`; None lets every level through (the spec's default)."""
        self.principal: Principal | None = None
        """Who subscribed to resources for this session last: each `resources/updated` is checked against what
        the policy in force lets it see (a resource the policy hides since is left)."""

    @property
    def capabilities(self) -> types.ClientCapabilities | None:
        return self._connection.client_capabilities

    def wants_log(self, level: types.LoggingLevel) -> bool:
        return self.level is None or LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.level)

    async def notify(self, notification: types.ServerNotification) -> None:
        data = notification.model_dump(by_alias=True, mode="json", exclude_none=True)
        await self._connection.notify(data["method"], data.get("params"))

    async def request(self, request: types.ServerRequest, result_type: type[Any]) -> Any:
        return await self._connection.send_request(request, result_type=result_type)


def origin_of(ctx: ServerRequestContext[Any, Any], client: ClientSide | None) -> CallOrigin:
    """Where an upstream's messages for this request go: the request's own channel, its progressToken."""
    session = ctx.session
    related = ctx.request_id
    stateless = is_stateless_era(ctx.protocol_version)

    async def notify(notification: types.ServerNotification) -> None:
        await session.send_notification(notification, related_request_id=related)

    async def request(request: types.ServerRequest, result_type: type[Any]) -> Any:
        return await session.send_request(request, result_type,
                                          metadata=ServerMessageMetadata(related_request_id=related))

    return CallOrigin(
        client=client,
        progress=session.report_progress,  # a no-op when the client gave no progressToken
        notify=notify,
        request=None if stateless else request,  # 2026-07-28 has no server-to-client requests
        log_levels=allowed_log_levels(ctx.protocol_version, ctx.meta) if stateless else None,
    )


class PassThrough:
    """The server's handlers for what upstreams offer besides tools (gateway only): prompts, resources, logging
    levels, roots changes. Each forwarded request runs as its origin (`OriginMiddleware`), like a tool call."""

    def __init__(self, front: UpstreamFeatures, session_of: SessionOf,
                 access: Callable[[], Access], refused: Callable[[str], None] = lambda kind: None) -> None:
        self.front = front
        self._session_of = session_of
        self._access = access
        self._refused = refused
        """The request's principal's Access (access.py): a prompt or resource it may not use does not exist."""

    def _client(self, ctx: ServerRequestContext[Any, Any]) -> SessionClient | None:
        state = self._session_of(ctx)
        client = state.client if state is not None else None
        return client if isinstance(client, SessionClient) else None

    async def list_prompts(self, ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListPromptsResult:
        access, front = self._access(), self.front
        prompts, more = _page([prompt for prompt in front.list_prompts()
                               if access.prompt(prompt.name, front.prompt_server(prompt.name))], params)
        return types.ListPromptsResult(prompts=prompts, next_cursor=more)

    def _check_prompt(self, name: str) -> None:
        server = self.front.prompt_server(name)
        if not self._access().prompt(name, server):
            if server is not None:
                self._refused("prompt")
            raise UnknownPromptError(name)

    def _check_uri(self, uri: str) -> None:
        server = self.front.uri_server(uri)
        if not self._access().resource(uri, server):
            if server is not None:
                self._refused("resource")
            raise UnknownResourceError(uri)

    async def get_prompt(self, ctx: ServerRequestContext[Any, Any],
                         params: types.GetPromptRequestParams) -> types.GetPromptResult:
        with _boundary():
            self._check_prompt(params.name)
            return await self.front.get_prompt(params.name, params.arguments)
        raise AssertionError("unreachable")  # mypy: _boundary re-raises

    async def complete(self, ctx: ServerRequestContext[Any, Any],
                       params: types.CompleteRequestParams) -> types.CompleteResult:
        with _boundary():
            ref = params.ref
            if isinstance(ref, types.PromptReference):
                self._check_prompt(ref.name)
            elif not self._access().template(ref.uri, self.front.template_server(ref.uri)):
                self._check_uri(ref.uri)  # not a template this principal may use: then a URI it may read
            return await self.front.complete(params)
        raise AssertionError("unreachable")

    async def list_resources(self, ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
        access, front = self._access(), self.front
        # Runs as its origin (OriginMiddleware): what this session's results named shapes its list.
        resources, more = _page([resource for resource in front.list_resources()
                                 if access.resource(resource.uri, front.uri_server(resource.uri))], params)
        return types.ListResourcesResult(resources=resources, next_cursor=more)

    async def list_templates(self, ctx: ServerRequestContext[Any, Any],
                             params: Any) -> types.ListResourceTemplatesResult:
        access, front = self._access(), self.front
        allowed = [template for template in front.list_templates()
                   if access.template(template.uri_template, front.template_server(template.uri_template))]
        templates, more = _page(allowed, params)
        return types.ListResourceTemplatesResult(resource_templates=templates, next_cursor=more)

    async def read_resource(self, ctx: ServerRequestContext[Any, Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        with _boundary():
            self._check_uri(str(params.uri))
            return await self.front.read_resource(str(params.uri))
        raise AssertionError("unreachable")

    async def subscribe(self, ctx: ServerRequestContext[Any, Any],
                        params: types.SubscribeRequestParams) -> types.EmptyResult:
        client = self._client(ctx)
        if client is None:
            raise MCPError(code=types.INVALID_REQUEST, message="Subscriptions need a session")
        with _boundary():
            self._check_uri(str(params.uri))
            client.principal = current_principal()
            await self.front.subscribe(str(params.uri), client)
        return types.EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any, Any],
                          params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        client = self._client(ctx)
        if client is not None:
            with _boundary():
                await self.front.unsubscribe(str(params.uri), client)
        return types.EmptyResult()

    async def set_level(self, ctx: ServerRequestContext[Any, Any],
                        params: types.SetLevelRequestParams) -> types.EmptyResult:
        client = self._client(ctx)
        if client is not None:
            client.level = params.level
            await self.front.set_level(client, params.level)
        return types.EmptyResult()

    async def roots_changed(self, ctx: ServerRequestContext[Any, Any], params: Any) -> None:
        client = self._client(ctx)
        if client is not None:
            await self.front.roots_changed(client)

    async def initialized(self, ctx: ServerRequestContext[Any, Any], params: Any) -> None:
        client = self._client(ctx)
        if client is not None:
            await self.front.session_opened(client)


@contextmanager
def _boundary() -> Iterator[None]:
    """The library's errors as JSON-RPC errors: prompts and resources have no isError result."""
    try:
        yield
    except LazyToolsError as exc:
        note_reason(reason_of(exc))
        if isinstance(exc, UnknownResourceError):
            raise MCPError(code=RESOURCE_NOT_FOUND, message=str(exc), data={"uri": exc.args[0]}) from None
        raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None


class SessionClients:
    """The sessions of a store that have a client, as upstreams see them."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def __iter__(self) -> Iterator[ClientSide]:
        return iter([state.client for state in self._store if state.client is not None])

    def get(self, key: str) -> ClientSide | None:
        state = self._store.get(key)
        return state.client if state is not None else None
