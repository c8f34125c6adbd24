"""A policy file's format (pydantic models) and the decisions it makes for one principal (a `Grant`).

A policy is a default (`deny` or `allow`) and rules. A rule applies to the principals its `who` names and
allows or denies servers, tools, prompts and resources by glob pattern, constrains arguments, and may raise the
principal's rate limit. For one principal: anything a rule that applies denies is denied (deny wins); else what a
rule allows, or everything when the default is `allow`. Patterns match names without regard to case, so a case
variant of a name is decided like the name, but for resource allows, which are exact about case; resource patterns
match every form of a URI a server may act on.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..identity import Principal

__all__ = [
    "MAX_RULES",
    "ArgumentRule",
    "Constraint",
    "Grant",
    "Policy",
    "PolicySpec",
    "RuleSpec",
    "Targets",
    "check_path",
]

MAX_RULES = 10_000
_PATTERNS = 10_000
"""Patterns one list of a rule may hold."""
_WHO_KINDS = ("user", "token", "stdio", "group", "role", "scope", "kind")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Targets(_Strict):
    """What a rule allows or denies: glob patterns (`*`, `?`, `[abc]`) over names or URIs."""

    servers: list[str] = Field(default_factory=list, max_length=_PATTERNS)
    """Upstream servers (or in-process groups): every tool, prompt and resource they serve."""
    tools: list[str] = Field(default_factory=list, max_length=_PATTERNS)
    """Tools by public name (`github__create_issue`, `github__*`)."""
    prompts: list[str] = Field(default_factory=list, max_length=_PATTERNS)
    resources: list[str] = Field(default_factory=list, max_length=_PATTERNS)
    """Resource URIs (and resource templates, by their template text)."""


class ArgumentRule(_Strict):
    """A constraint on one argument of the tools it names."""

    tools: list[str] = Field(min_length=1, max_length=_PATTERNS)
    argument: str = Field(min_length=1, max_length=256)
    under: list[str] = Field(default_factory=list, max_length=1000)
    """The argument (a path, or a list of paths) must be one of these absolute paths or below one."""
    one_of: list[Any] = Field(default_factory=list, max_length=1000)
    """The argument must equal one of these values."""
    optional: bool = False
    """Whether a call may leave the argument out (by default it must give one: the tool's default is unknown)."""

    @field_validator("under")
    @classmethod
    def _absolute(cls, value: list[str]) -> list[str]:
        out = []
        for prefix in value:
            normal = _normal_path(prefix)
            if normal is None:
                raise ValueError(f"{prefix!r} is not an absolute path")
            out.append(normal)
        return out


class RuleSpec(_Strict):
    who: list[str] = Field(min_length=1, max_length=_PATTERNS)
    """Whom the rule applies to: `*` (everyone), `user:NAME` (an OAuth token's subject, never a named principal),
    `token:NAME` and `stdio:NAME` (the named principals of the shared token and of stdio), `group:NAME`,
    `role:NAME`, `scope:NAME`, `kind:oauth|token|stdio|anonymous`."""
    allow: Targets = Targets()
    deny: Targets = Targets()
    arguments: list[ArgumentRule] = Field(default_factory=list, max_length=1000)
    calls_per_minute: int | None = Field(default=None, ge=1)

    @field_validator("who")
    @classmethod
    def _selectors(cls, value: list[str]) -> list[str]:
        for selector in value:
            kind, sep, name = selector.partition(":")
            if selector != "*" and (not sep or kind not in _WHO_KINDS or not name):
                raise ValueError(f"{selector!r}: expected '*' or one of {', '.join(k + ':NAME' for k in _WHO_KINDS)}")
        return value


class PolicySpec(_Strict):
    """A policy file's contents."""

    default: Literal["deny", "allow"] = "deny"
    calls_per_minute: int | None = Field(default=None, ge=1)
    """Every principal's limit unless a rule that applies to it sets one; unset: no limit."""
    rules: list[RuleSpec] = Field(default_factory=list, max_length=MAX_RULES)


class _Matcher:
    """A list of glob patterns, case-insensitive unless `fold` is false: plain names in a set, the others as regular expressions grouped by
    the server part (`github__`) of their literal start, so a name is tried against its own server's patterns and
    those without one, not against every pattern of a 1,000-rule policy."""

    __slots__ = ("_exact", "_by_server", "_anywhere", "_fold")

    def __init__(self, patterns: Iterable[str], *, fold: bool = True) -> None:
        self._fold = fold
        unique = {pattern.lower() if fold else pattern for pattern in patterns}
        globs = sorted(p for p in unique if any(char in p for char in "*?["))
        self._exact = frozenset(unique.difference(globs))
        grouped: dict[str, list[str]] = {}
        for pattern in globs:
            grouped.setdefault(_server_part(re.split(r"[*?\[]", pattern, maxsplit=1)[0]), []).append(pattern)
        flags = re.IGNORECASE if fold else 0
        compiled = {server: re.compile("|".join(fnmatch.translate(p) for p in group), flags)
                    for server, group in grouped.items()}
        self._anywhere = compiled.pop("", None)
        self._by_server = compiled

    def __bool__(self) -> bool:
        return bool(self._exact) or bool(self._by_server) or self._anywhere is not None

    def __call__(self, text: str | None) -> bool:
        if text is None:
            return False
        key = text.lower() if self._fold else text
        if key in self._exact:
            return True
        if self._anywhere is not None and self._anywhere.match(text) is not None:
            return True
        own = self._by_server.get(_server_part(key)) if self._by_server else None
        return own is not None and own.match(text) is not None

    def any(self, texts: Iterable[str]) -> bool:
        return any(self(text) for text in texts)

    def every(self, texts: Sequence[str]) -> bool:
        return bool(texts) and all(self(text) for text in texts)


def _server_part(text: str) -> str:
    """`github__` of `github__create_issue` (the part a pattern's literal start must hold whole), else ''."""
    head, sep, _ = text.partition("__")
    return head + sep if sep else ""


@dataclass(frozen=True, slots=True)
class Constraint:
    tools: _Matcher
    rule: ArgumentRule


class Grant:
    """What one set of rules (those that apply to a principal) decides. Principals to whom the same rules apply
    share one Grant, and with it every cache built for it."""

    def __init__(self, rules: Sequence[RuleSpec], *, default_allow: bool, calls_per_minute: int | None,
                 key: tuple[int, ...]) -> None:
        self.key = key
        self.default_allow = default_allow
        limits = [rule.calls_per_minute for rule in rules if rule.calls_per_minute is not None]
        self.calls_per_minute = max(limits) if limits else calls_per_minute
        """A rule that applies grants its limit; the most generous one wins (limits are quotas, not bans)."""

        def side(which: str, kind: str, *, fold: bool = True) -> _Matcher:
            return _Matcher((p for rule in rules for p in getattr(getattr(rule, which), kind)), fold=fold)

        # An allow of a URI is exact about case (the server receives `HANDBOOK`, not `handbook`); a deny is not.
        self._allow = {kind: side("allow", kind, fold=kind != "resources")
                       for kind in ("servers", "tools", "prompts", "resources")}
        self._deny = {kind: side("deny", kind) for kind in ("servers", "tools", "prompts", "resources")}
        self.resource_rules = bool(self._allow["resources"] or self._deny["resources"])
        """Whether any rule names resources: if none does, a URI's decision depends on its server alone."""
        self.constraints = tuple(Constraint(_Matcher(a.tools), a) for rule in rules for a in rule.arguments)
        self._constraints_of: dict[str, tuple[ArgumentRule, ...]] = {}

    def __repr__(self) -> str:
        return f"Grant(rules={list(self.key)}, default_allow={self.default_allow})"

    def _decide(self, kind: str, names: Sequence[str], server: str | None, *, every: bool = False) -> bool:
        deny, allow = self._deny, self._allow
        if deny["servers"](server) or deny[kind].any(names):
            return False
        if self.default_allow or allow["servers"](server):
            return True
        return allow[kind].every(names) if every else allow[kind].any(names)

    def tool(self, name: str, server: str | None) -> bool:
        return self._decide("tools", (name,), server)

    def prompt(self, name: str, server: str | None) -> bool:
        return self._decide("prompts", (name,), server)

    def resource(self, forms: Sequence[str], server: str | None) -> bool:
        """`forms`: every form of the URI (uris.py: `uri_forms`); one that a deny matches, in any case, denies it,
        and an allow must match them all, case included."""
        return self._decide("resources", forms, server, every=True)

    def check_arguments(self, tool: str, arguments: Mapping[str, Any] | None) -> str | None:
        """Why `arguments` break a constraint for `tool`, or None when they keep every one."""
        rules = self._constraints_of.get(tool)
        if rules is None:
            if len(self._constraints_of) > 65_536:
                self._constraints_of.clear()
            rules = self._constraints_of[tool] = tuple(c.rule for c in self.constraints if c.tools(tool))
        for rule in rules:
            why = _check(rule, arguments or {})
            if why is not None:
                return why
        return None


def _check(rule: ArgumentRule, arguments: Mapping[str, Any]) -> str | None:
    name = rule.argument
    if name not in arguments:
        return None if rule.optional else f"argument {name!r} is required by policy"
    value = arguments[name]
    if rule.one_of and value not in rule.one_of:
        return f"argument {name!r} must be one of the values the policy allows"
    if rule.under:
        values = value if isinstance(value, list) else [value]
        if not values:
            # An empty list names no path, so no path outside: but the tool may read it as "everything" (its
            # default root). Refused, as a missing argument is.
            return f"argument {name!r} must be a path under {', '.join(rule.under)} (an empty list is none)"
        for item in values:
            if not isinstance(item, str) or not check_path(item, rule.under):
                return f"argument {name!r} must be a path under {', '.join(rule.under)}"
    return None


def _normal_path(path: str) -> str | None:
    """An absolute path with `.` and `..` resolved and `\\` read as a separator; None for a path that cannot be
    judged: relative (relative to what, the upstream's directory?), `~`, or with a control character."""
    if not path or any(ord(char) < 0x20 or ord(char) == 0x7F for char in path):
        return None
    path = path.replace("\\", "/")
    if not path.startswith("/"):
        return None
    parts: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if parts:
                parts.pop()
            continue
        parts.append(segment)
    return "/" + "/".join(parts)


def check_path(path: str, prefixes: Sequence[str]) -> bool:
    """Whether `path`, normalised, is one of `prefixes` (already normal) or below one. Case counts: on a
    case-insensitive file system that refuses a path it could have allowed, never the other way round."""
    normal = _normal_path(path)
    if normal is None:
        return False
    return any(normal == prefix or normal.startswith(prefix.rstrip("/") + "/") for prefix in prefixes)


@dataclass
class Policy:
    """A compiled policy: each principal's `Grant`, cached."""

    spec: PolicySpec
    generation: int = 0
    """Counts the reloads of the file: caches built for an older policy are dropped."""
    _grants: dict[tuple[int, ...], Grant] = field(default_factory=dict)
    _by_principal: dict[Principal, Grant] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._who = [_who_sets(rule.who) for rule in self.spec.rules]

    def cached_grant(self, principal: Principal) -> Grant | None:
        return self._by_principal.get(principal)

    def grant_for(self, principal: Principal) -> Grant:
        found = self._by_principal.get(principal)
        if found is not None:
            return found
        key = tuple(i for i, who in enumerate(self._who) if _applies(who, principal))
        grant = self._grants.get(key)
        if grant is None:
            grant = self._grants[key] = Grant([self.spec.rules[i] for i in key],
                                              default_allow=self.spec.default == "allow",
                                              calls_per_minute=self.spec.calls_per_minute, key=key)
        if len(self._by_principal) >= 4096:  # bounded: a token per user per hour for a month would grow it
            self._by_principal.clear()
        self._by_principal[principal] = grant
        return grant


_Who = dict[str, frozenset[str]]


def spaced_names(spec: PolicySpec) -> list[str]:
    """The `group:` and `role:` selectors whose name holds whitespace: none matches a claim split on spaces."""
    return sorted({selector for rule in spec.rules for selector in rule.who
                   if selector.startswith(("group:", "role:")) and any(c.isspace() for c in selector)})


def _who_sets(selectors: Sequence[str]) -> _Who:
    sets: dict[str, set[str]] = {}
    for selector in selectors:
        kind, _, name = selector.partition(":") if selector != "*" else ("*", "", "*")
        sets.setdefault(kind, set()).add(name)
    return {kind: frozenset(names) for kind, names in sets.items()}


def _applies(who: _Who, principal: Principal) -> bool:
    return bool(
        "*" in who
        # A name matches within its kind only: an OAuth subject `token` is not the shared token's user `token`.
        or principal.name in who.get("user" if principal.kind == "oauth" else principal.kind, ())
        or principal.kind in who.get("kind", ())
        or not principal.groups.isdisjoint(who.get("group", ()))
        or not principal.roles.isdisjoint(who.get("role", ()))
        or not principal.scopes.isdisjoint(who.get("scope", ()))
    )
