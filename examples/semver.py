"""Semantic versioning (semver 2.0.0): parse, compare, sort, bump and check version ranges."""

import functools
import re
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import Field

from ._common import ensure_max_items

__all__ = ["semver_compare", "semver_sort", "semver_bump", "semver_satisfies"]

_SEMVER_RE = re.compile(
    r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


class Version(NamedTuple):
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...]
    build: str

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        text += f"-{'.'.join(self.prerelease)}" if self.prerelease else ""
        return text + (f"+{self.build}" if self.build else "")


def parse_version(text: str) -> Version:
    """Parse 'MAJOR.MINOR.PATCH[-pre][+build]' (a leading 'v' is allowed) or raise ValueError."""
    match = _SEMVER_RE.fullmatch(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a valid semantic version like '1.4.2' or '2.0.0-rc.1'")
    major, minor, patch, pre, build = match.groups()
    return Version(int(major), int(minor), int(patch), tuple(pre.split(".")) if pre else (), build or "")


def _cmp(a: Version, b: Version) -> int:
    core_a, core_b = a[:3], b[:3]
    if core_a != core_b:
        return -1 if core_a < core_b else 1
    # A pre-release sorts before the release; build metadata never affects precedence.
    if not a.prerelease or not b.prerelease:
        return (not a.prerelease) - (not b.prerelease)
    for x, y in zip(a.prerelease, b.prerelease):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1
        return -1 if x < y else 1
    return (len(a.prerelease) > len(b.prerelease)) - (len(a.prerelease) < len(b.prerelease))


def semver_compare(
    version_a: Annotated[str, Field(description="First version, e.g. '1.2.3'.")],
    version_b: Annotated[str, Field(description="Second version, e.g. '1.10.0-beta.2'.")],
) -> dict[str, Any]:
    """Compare two semantic version numbers and tell which one is newer (pre-releases sort before releases)."""
    result = _cmp(parse_version(version_a), parse_version(version_b))
    return {"result": result, "relation": {-1: "<", 0: "==", 1: ">"}[result], "newer": None if result == 0 else (version_a if result > 0 else version_b)}


def semver_sort(
    versions: Annotated[list[str], Field(description="Version strings to sort.")],
    descending: Annotated[bool, Field(description="Newest first.")] = False,
) -> list[str]:
    """Sort a list of semantic version numbers from oldest to newest (or newest first)."""
    ensure_max_items(versions, "versions", 10_000)
    parsed = [(parse_version(v), v) for v in versions]
    parsed.sort(key=functools.cmp_to_key(lambda x, y: _cmp(x[0], y[0])), reverse=descending)
    return [original for _, original in parsed]


def semver_bump(
    version: Annotated[str, Field(description="Current version, e.g. '1.4.2'.")],
    part: Annotated[Literal["major", "minor", "patch", "prerelease"], Field(description="Which part to increment.")],
    prerelease_label: Annotated[str, Field(description="Label for pre-releases, e.g. 'rc', 'beta'.", pattern=r"^[0-9A-Za-z-]+$")] = "rc",
) -> str:
    """Increment a semantic version's major, minor, patch or pre-release number (e.g. 1.4.2 -> 1.5.0)."""
    v = parse_version(version)
    if not re.fullmatch(r"[0-9A-Za-z-]+", prerelease_label):
        raise ValueError("prerelease_label may only contain letters, digits and '-'")
    if part == "major":
        # 2.0.0-rc.1 bumps to 2.0.0: the pending release is what gets published.
        bumped = Version(v.major if v.prerelease and not v.minor and not v.patch else v.major + 1, 0, 0, (), "")
    elif part == "minor":
        bumped = Version(v.major, v.minor if v.prerelease and not v.patch else v.minor + 1, 0, (), "")
    elif part == "patch":
        bumped = Version(v.major, v.minor, v.patch if v.prerelease else v.patch + 1, (), "")
    elif v.prerelease and v.prerelease[-1].isdigit():
        bumped = Version(v.major, v.minor, v.patch, v.prerelease[:-1] + (str(int(v.prerelease[-1]) + 1),), "")
    elif v.prerelease:
        bumped = Version(v.major, v.minor, v.patch, v.prerelease + ("1",), "")
    else:
        bumped = Version(v.major, v.minor, v.patch + 1, (prerelease_label, "0"), "")
    return str(bumped)


def _caret_upper(v: Version) -> Version:
    if v.major:
        return Version(v.major + 1, 0, 0, (), "")
    if v.minor:
        return Version(0, v.minor + 1, 0, (), "")
    return Version(0, 0, v.patch + 1, (), "")


def _partial(text: str) -> tuple[Version, Version | None]:
    """Lower bound and exclusive upper bound for '1', '1.2', '1.2.x' or a full version (upper None)."""
    parts = text.lstrip("v").split(".")
    if len(parts) == 3 and parts[2] not in ("x", "X", "*"):
        return parse_version(text), None
    nums = [p for p in parts if p not in ("x", "X", "*")]
    if not all(p.isdigit() for p in nums) or len(nums) > 2 or not nums:
        raise ValueError(f"invalid version in range: {text!r}")
    major, minor = int(nums[0]), int(nums[1]) if len(nums) > 1 else None
    if minor is None:
        return Version(major, 0, 0, (), ""), Version(major + 1, 0, 0, (), "")
    return Version(major, minor, 0, (), ""), Version(major, minor + 1, 0, (), "")


def _satisfies_one(v: Version, comparator: str) -> bool:
    match = re.fullmatch(r"(\^|~|>=|<=|>|<|=)?\s*(\S+)", comparator)
    if not match:
        raise ValueError(f"invalid range comparator {comparator!r}")
    op, target = match.group(1) or "=", match.group(2)
    if target in ("*", "x", "X"):
        return True
    low, high = _partial(target)
    if op == "^":
        caret = _caret_upper(low)
        # For partial versions ('^0.x', '^1.2') the wider of the two upper bounds is the npm meaning.
        high = caret if high is None or _cmp(caret, high) > 0 else high
    elif op == "~":
        high = Version(low.major, low.minor + 1, 0, (), "") if high is None else high
    elif op in (">", "<=") and high is not None:
        low = high  # '>1.2' means '>=1.3.0'; '<=1.2' means '<1.3.0'
        op = ">=" if op == ">" else "<"
    if op in ("^", "~") or (op == "=" and high is not None):
        return _cmp(v, low) >= 0 and _cmp(v, high) < 0  # type: ignore[arg-type]
    c = _cmp(v, low)
    return {"=": c == 0, ">=": c >= 0, ">": c > 0, "<=": c <= 0, "<": c < 0}[op]


def semver_satisfies(
    version: Annotated[str, Field(description="Version to test, e.g. '1.4.2'.")],
    range_expression: Annotated[str, Field(description="npm-style range: '^1.2.0', '~1.4', '>=1.0.0 <2.0.0', '1.x || 2.x'.")],
) -> dict[str, Any]:
    """Check whether a version satisfies an npm/Cargo-style semver range such as ^1.2.0, ~1.4 or '>=1.0 <2.0'."""
    v = parse_version(version)
    if len(range_expression) > 500:
        raise ValueError("range_expression is too long")
    alternatives = [alt.strip() for alt in range_expression.split("||")]
    for alt in alternatives:
        # Allow "1.0.0 - 2.0.0" hyphen ranges and ">= 1.0" with a space after the operator.
        alt = re.sub(r"^(\S+)\s+-\s+(\S+)$", r">=\1 <=\2", alt)
        alt = re.sub(r"(\^|~|>=|<=|>|<|=)\s+", r"\1", alt)
        comparators = alt.split() or ["*"]
        if all(_satisfies_one(v, c) for c in comparators):
            return {"satisfies": True, "matched": alt}
    return {"satisfies": False, "matched": None}
