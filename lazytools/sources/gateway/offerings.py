"""What an upstream offers besides tools: its prompts, resources and resource templates, listed and filtered.

They cost the model nothing until a user picks one, so every server's are listed, deferred or not. The config's
`include`/`exclude` patterns apply to them as to tools (a prompt by its name; a resource or template by its name
or its URI).
"""

from __future__ import annotations

import fnmatch
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate
from pydantic import ValidationError

from ...safetext import clip
from .config import ServerConfig

__all__ = ["MAX_NAMED_URI", "MAX_PAGES", "NamedUris", "Offerings", "SeenUris", "list_offerings", "permitted", "uris_in"]

MAX_PAGES = 100
"""Bound on pagination: a server whose cursor never ends cannot hang a refresh."""

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Offerings:
    prompts: tuple[types.Prompt, ...] = ()
    resources: tuple[types.Resource, ...] = ()
    templates: tuple[types.ResourceTemplate, ...] = ()
    subscribe: bool = False
    """Whether the server accepts `resources/subscribe`."""
    hidden: tuple[str, ...] = ()
    """URIs of resources it listed that include/exclude keep out: not read even when asked by URI."""
    hidden_templates: tuple[str, ...] = ()
    """URI templates it listed that include/exclude keep out: no URI they match is read from it, by any route."""


def permitted(config: ServerConfig, *names: str) -> bool:
    """Whether the config's include/exclude lists let through something known by any of `names`."""

    def matches(patterns: Iterable[str]) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names)

    return (config.include is None or matches(config.include)) and not matches(config.exclude)


async def _pages(fetch: Callable[[str | None], Awaitable[tuple[list[_T], str | None]]],
                 limit: int) -> tuple[list[_T], bool]:
    """Every page's items, stopping once more than `limit` are in (the caller cuts and warns), and whether it
    stopped at `MAX_PAGES` with a next page still announced."""
    items: list[_T] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page, cursor = await fetch(cursor)
        items += page
        if cursor is None or len(items) > limit:
            return items, False
    return items, True


async def _listed(upstream: str, what: str, fetch: Callable[[str | None], Awaitable[tuple[list[_T], str | None]]],
                  limit: int) -> list[_T] | None:
    """One list of an upstream, on its own: None when it failed (the caller keeps what it had), empty when the
    server has no such method, at most `limit` items (with a warning when it listed more)."""
    try:
        items, unfinished = await _pages(fetch, limit)
    except MCPError as exc:
        if exc.code == types.METHOD_NOT_FOUND:  # a server need not answer every list of a capability it declares
            logger.debug("upstream %r does not answer the %s list: %s", upstream, what, exc.error.message)
            return []
        logger.warning("upstream %r: listing its %s failed: error %d: %s", upstream, what, exc.code,
                       clip(exc.error.message))
        return None
    except ValidationError as exc:  # the page itself was malformed (malformed items are dropped before: listing.py)
        logger.warning("upstream %r: listing its %s failed: a malformed answer: %s", upstream, what,
                       clip(str(exc.errors()[0]["msg"]) if exc.errors() else str(exc)))
        return None
    if len(items) > limit:
        logger.warning("upstream %r lists more than %d %s; serving the first %d (LAZYTOOLS_MAX_UPSTREAM_OFFERINGS)",
                       upstream, limit, what, limit)
        items = items[:limit]
    elif unfinished:
        logger.warning("upstream %r announces more %s after %d pages; serving the %d listed so far (a cursor that "
                       "never ends)", upstream, what, MAX_PAGES, len(items))
    return items


def _usable_templates(config: ServerConfig, templates: list[types.ResourceTemplate],
                      previous: tuple[types.ResourceTemplate, ...]) -> list[types.ResourceTemplate]:
    """`templates` without those whose syntax is invalid (they could match nothing; each dropped with a warning),
    with a warning, when first listed, about each that matches URIs of any scheme (one starting with an
    expression, as `{+all}`): it serves every URI that no earlier server in the config lists, templates or named."""
    upstream = config.name
    known = {template.uri_template for template in previous}
    usable: list[types.ResourceTemplate] = []
    for template in templates:
        text = template.uri_template
        try:
            UriTemplate.parse(text)
        except (InvalidUriTemplate, ValueError) as exc:
            logger.warning("upstream %r lists the resource template '%s', whose syntax is invalid (%s); not listed",
                           upstream, clip(text), clip(str(exc)))
            continue
        if text.startswith("{") and text not in known and permitted(config, template.name, text):
            logger.warning("upstream %r lists the resource template '%s', which matches URIs of any scheme: it serves "
                           "every URI no server before it in the config lists, templates or named (exclude it, or "
                           "put this server last)", upstream, clip(text))
        usable.append(template)
    return usable


async def list_offerings(client: Client, config: ServerConfig, *, limit: int,
                         previous: Offerings = Offerings()) -> Offerings:
    """Everything but tools that `client`'s server declares, after include/exclude, at most `limit` of each kind.

    Each list stands alone: one that fails keeps `previous`'s of that kind, one the server does not answer (-32601)
    is empty, and the others are served either way."""
    caps = client.server_capabilities
    session = client.session
    name = config.name

    def params(cursor: str | None) -> types.PaginatedRequestParams:
        return types.PaginatedRequestParams(cursor=cursor)

    async def prompts(cursor: str | None) -> tuple[list[types.Prompt], str | None]:
        page = await session.list_prompts(params=params(cursor))
        return page.prompts, page.next_cursor

    async def resources(cursor: str | None) -> tuple[list[types.Resource], str | None]:
        page = await session.list_resources(params=params(cursor))
        return page.resources, page.next_cursor

    async def templates(cursor: str | None) -> tuple[list[types.ResourceTemplate], str | None]:
        page = await session.list_resource_templates(params=params(cursor))
        return page.resource_templates, page.next_cursor

    found = Offerings()
    if caps.prompts is not None:
        listed = await _listed(name, "prompts", prompts, limit)
        found = replace(found, prompts=previous.prompts if listed is None else
                        tuple(p for p in listed if permitted(config, p.name)))
    if caps.resources is not None:
        found = replace(found, subscribe=bool(caps.resources.subscribe))
        listed_resources = await _listed(name, "resources", resources, limit)
        if listed_resources is None:
            found = replace(found, resources=previous.resources, hidden=previous.hidden)
        else:
            found = replace(found,
                            resources=tuple(r for r in listed_resources if permitted(config, r.name, r.uri)),
                            hidden=tuple(r.uri for r in listed_resources if not permitted(config, r.name, r.uri)))
        listed_templates = await _listed(name, "resource templates", templates, limit)
        if listed_templates is not None:
            listed_templates = _usable_templates(config, listed_templates, previous.templates)
        if listed_templates is None:
            found = replace(found, templates=previous.templates, hidden_templates=previous.hidden_templates)
        else:
            found = replace(found,
                            templates=tuple(t for t in listed_templates if permitted(config, t.name, t.uri_template)),
                            hidden_templates=tuple(t.uri_template for t in listed_templates
                                                   if not permitted(config, t.name, t.uri_template)))
    return found


def uris_in(result: Any) -> list[str]:
    """The resource URIs a tool result or prompt points at (resource links, embedded resources)."""
    blocks: list[Any] = list(getattr(result, "content", None) or [])
    blocks += [message.content for message in getattr(result, "messages", None) or []]
    uris: list[str] = []
    for block in blocks:
        if isinstance(block, types.ResourceLink):
            uris.append(str(block.uri))
        elif isinstance(block, types.EmbeddedResource):
            uris.append(str(block.resource.uri))
    return uris


MAX_NAMED_URI = 8192
"""Characters of a URI named in a result that is remembered to route reads (8,000 octets is what RFC 9110 asks
parsers to support): a longer one is not kept, and so not readable unless a listing or template names it."""
_ENTRY_COST = 100
"""Bytes charged for remembering a URI besides its own: the string's header and its slot in a dict."""


def _cost(uri: str) -> int:
    return len(uri.encode("utf-8", "surrogatepass")) + _ENTRY_COST


@dataclass(slots=True)
class SeenUris:
    """URIs an upstream named in its results, most recent last: at most `limit` of them and `max_bytes` in all
    (see `_cost`), the oldest dropped first, so a hostile server cannot grow it without bound."""

    limit: int = 4096
    max_bytes: int = 1 << 20
    size: int = 0
    """Bytes charged for the URIs kept."""
    _uris: OrderedDict[str, int] = field(default_factory=OrderedDict)

    def add(self, uris: Iterable[str]) -> None:
        for uri in uris:
            if len(uri) > MAX_NAMED_URI:
                continue
            cost = self._uris.pop(uri, None)
            if cost is None:
                cost = _cost(uri)
                self.size += cost
            self._uris[uri] = cost
        while self._uris and (len(self._uris) > self.limit or self.size > self.max_bytes):
            self.size -= self._uris.popitem(last=False)[1]

    def __contains__(self, uri: object) -> bool:
        return uri in self._uris

    def __iter__(self) -> Iterator[str]:
        """Oldest first."""
        return iter(list(self._uris))


@dataclass(slots=True)
class NamedUris:
    """The URIs an upstream's results named, kept apart per client session: what one session's calls name routes
    only that session's reads. At most `sessions` sessions are remembered and `max_bytes` of URIs for all of them
    (stateless callers share one set); past either, the least recently active sessions' sets go first, whole."""

    sessions: int = 1024
    max_bytes: int = 8 << 20
    per_session_bytes: int = 1 << 20
    size: int = 0
    """Bytes charged for the URIs of every session (see `SeenUris`)."""
    _by_session: OrderedDict[str | None, SeenUris] = field(default_factory=OrderedDict)

    def add(self, session: str | None, uris: Iterable[str]) -> None:
        uris = [uri for uri in uris if len(uri) <= MAX_NAMED_URI]
        if not uris:
            return
        seen = self._by_session.get(session)
        if seen is None:
            seen = self._by_session[session] = SeenUris(max_bytes=self.per_session_bytes)
        self._by_session.move_to_end(session)
        before = seen.size
        seen.add(uris)
        self.size += seen.size - before
        # The session just served is the last in order and within its own bound: it is never the one dropped.
        while len(self._by_session) > self.sessions or (self.size > self.max_bytes and len(self._by_session) > 1):
            self.size -= self._by_session.popitem(last=False)[1].size

    def named(self, session: str | None, uri: str) -> bool:
        seen = self._by_session.get(session)
        return seen is not None and uri in seen

    def forget(self, session: str) -> None:
        seen = self._by_session.pop(session, None)
        if seen is not None:
            self.size -= seen.size

    def of(self, session: str) -> list[str]:
        """The URIs `session`'s results named, oldest first (what a shared session record keeps)."""
        seen = self._by_session.get(session)
        return list(seen) if seen is not None else []

    def restore(self, session: str, uris: Iterable[str]) -> None:
        """`session` named exactly `uris` (a shared session's record, loaded on another replica)."""
        self.forget(session)
        self.add(session, uris)
