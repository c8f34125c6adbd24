"""What a principal may see and call: the one point where the policy (policy/) meets every route.

`Gate.access()` gives the request's `Access`: its principal's view of the catalog (tools/list, the manifest in
search_tools' description, invoke_tool and tools/call resolve names in it, and unknown-name suggestions come from
it), of the search index (results and suggestions), and its decisions on prompts, resources, templates and
arguments. A tool the principal may not call is, on every route, a tool that does not exist. Without a policy
file the Access is the whole catalog. Accesses are cached per set of rules; `AccessMiddleware` builds one in a
worker thread before a request reads it (middleware/access.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..audit import note_reason
from ..catalog import Catalog
from ..entry import ToolEntry
from ..errors import PolicyRefusedError
from ..identity import Principal, current_principal
from ..policy.file import PolicyFile
from ..policy.rules import Grant
from ..search import SearchIndex
from ..uris import UnsafeUriError, uri_forms

__all__ = ["Access", "Gate"]


class Access:
    """One principal's share of the catalog and of upstreams' prompts and resources (`grant` None: everything)."""

    def __init__(self, catalog: Catalog, grant: Grant | None, gate: Gate | None = None) -> None:
        self.grant = grant
        self._gate = gate
        self.catalog = catalog if grant is None else catalog.only(lambda entry: grant.tool(entry.name, entry.group))
        self._index: tuple[SearchIndex, SearchIndex] | None = None

    def index(self, index: SearchIndex) -> SearchIndex:
        """`index` restricted to this principal's tools (built once per index)."""
        if self.grant is None:
            return index
        cached = self._index
        if cached is None or cached[0] is not index:
            visible = self.catalog
            cached = self._index = (index, index.restricted(lambda entry: entry.name in visible))
        return cached[1]

    def prompt(self, name: str, server: str | None) -> bool:
        return self.grant is None or self.grant.prompt(name, server)

    def resource(self, uri: str, server: str | None) -> bool:
        if self.grant is None:
            return True
        if not self.grant.resource_rules:
            return self.grant.resource((uri,), server)  # decided by its server alone
        try:
            forms = uri_forms(uri)
        except UnsafeUriError:
            return False  # a URI that cannot be compared safely is nobody's when resource rules apply
        return self.grant.resource(forms, server)

    def template(self, template: str, server: str | None) -> bool:
        return self.grant is None or self.grant.resource((template,), server)

    @property
    def judges_arguments(self) -> bool:
        """Whether `check_arguments` can refuse a call (the principal's rules constrain some tool's arguments)."""
        return self.grant is not None and bool(self.grant.constraints)

    def check_arguments(self, entry: ToolEntry, arguments: Any) -> None:
        if self.grant is None or not self.grant.constraints:
            return
        why = self.grant.check_arguments(entry.name, arguments if isinstance(arguments, Mapping) else None)
        if why is not None:
            if self._gate is not None:
                self._gate.refused("arguments")
            raise PolicyRefusedError(f"Policy refuses this call of {entry.name}: {why}.")


class Gate:
    """The policy in force (re-read when its file changes) and each principal's `Access`, cached per grant until
    the policy or the catalog changes."""

    def __init__(self, catalog: Catalog, policy: PolicyFile | None, local: Principal) -> None:
        self.catalog = catalog
        self.policy = policy
        self.local = local
        """Outside any request (and over stdio) the principal is the stdio user."""
        self._everything: tuple[int, Access] | None = None
        self._stamp: tuple[int, int] = (-1, -1)
        self._cache: dict[Grant, Access] = {}
        self.refusals: Counter[str] = Counter()
        """Requests refused by the policy, by what they named: tool, prompt, resource or arguments (metrics)."""

    def refused(self, kind: str) -> None:
        self.refusals[kind] += 1
        note_reason("denied")  # the audit line says why, whatever the client is told (a hidden tool is "unknown")

    def principal(self) -> Principal:
        return current_principal() or self.local

    def grant(self, principal: Principal | None = None) -> Grant | None:
        return self.policy.current().grant_for(principal or self.principal()) if self.policy is not None else None

    def warm(self, principal: Principal) -> bool:
        """Whether `access(principal)` is a lookup now: no look at the policy file due, the principal's Access built
        for this policy and catalog."""
        if self.policy is None:
            return self._everything is not None and self._everything[0] == self.catalog.version
        if self.policy.due():
            return False
        policy = self.policy.policy
        if (policy.generation, self.catalog.version) != self._stamp:
            return False
        grant = policy.cached_grant(principal)
        return grant is not None and grant in self._cache

    def access(self, principal: Principal | None = None) -> Access:
        """The Access of `principal` (default: the request's)."""
        catalog = self.catalog
        if self.policy is None:
            everything = self._everything
            if everything is None or everything[0] != catalog.version:
                everything = self._everything = (catalog.version, Access(catalog, None))
            return everything[1]
        policy = self.policy.current()
        stamp = (policy.generation, catalog.version)
        if stamp != self._stamp:
            self._stamp, self._cache = stamp, {}
        grant = policy.grant_for(principal or self.principal())
        found = self._cache.get(grant)
        if found is None:
            found = self._cache[grant] = Access(catalog, grant, self)
        return found
