"""Which upstream serves a resource URI, and the resources and templates listed under one server.

Resources keep their URIs, because tool results hold them (`resource_link`) and pass through unchanged: a URI is
routed to the first server in the config that lists it, has a template that matches it, or named it in a call or
prompt result of the same session (a later server cannot capture an earlier one's URIs by listing or templating
them; what one session's calls name never changes another session's routing). Nothing is guessed beyond that (no
"the only server using this scheme"). A server is never asked for a URI that its own excluded resources, excluded
templates or exclude patterns match, in any form the router or the server acts on (uris.py), whichever route led
to it.
"""

from __future__ import annotations

import fnmatch
import logging
import re

import mcp_types as types
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

from ...errors import UnknownResourceError
from ...origin import current_origin, session_key
from ...safetext import clip
from ...uris import UnsafeUriError, uri_forms
from .upstream import Upstream

__all__ = ["ResourceRoutes"]

logger = logging.getLogger(__name__)


class ResourceRoutes:
    """Every upstream's resources and templates, and the route of each URI to one of them."""

    def __init__(self, upstreams: list[Upstream]) -> None:
        self.upstreams = upstreams
        self._templates: dict[str, tuple[str, UriTemplate] | None] = {}
        """Parsed templates by their text, each with the literal text every URI it matches starts with."""
        self._hidden: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {}
        self._index: dict[str, Upstream] | None = None
        """Listed resources by URI, the first server in the config keeping a URI listed twice."""

    def changed(self) -> None:
        """An upstream's resources or templates changed: what was parsed and indexed from them is dropped."""
        self._templates.clear()
        self._index = None

    def _listed(self) -> dict[str, Upstream]:
        if self._index is None:
            index: dict[str, Upstream] = {}
            for upstream in self.upstreams:
                for resource in upstream.offerings.resources:
                    if resource.uri in index:
                        logger.info("resource %s of %r is listed by an earlier server too; not listed twice",
                                    clip(resource.uri), upstream.name)
                        continue
                    index[resource.uri] = upstream
            self._index = index
        return self._index

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
        lister = self._listed().get(uri)
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
