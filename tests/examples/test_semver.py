"""Tests for lazytools_examples.semver."""

import pytest
from lazytools_examples import semver


def test_semver_compare() -> None:
    assert semver.semver_compare("1.2.3", "1.10.0") == {"result": -1, "relation": "<", "newer": "1.10.0"}
    assert semver.semver_compare("1.0.0-alpha", "1.0.0")["result"] == -1
    assert semver.semver_compare("v1.0.0+build.1", "1.0.0+build.2")["relation"] == "=="
    with pytest.raises(ValueError, match="not a valid semantic version"):
        semver.semver_compare("1.2", "1.2.0")


def test_semver_sort_follows_the_spec_order() -> None:
    spec_order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]
    shuffled = [spec_order[i] for i in (7, 3, 0, 5, 2, 6, 1, 4)]
    assert semver.semver_sort(shuffled) == spec_order
    assert semver.semver_sort(["0.9.0", "0.10.0"], descending=True) == ["0.10.0", "0.9.0"]


@pytest.mark.parametrize(
    ("version", "part", "expected"),
    [
        ("1.4.2", "major", "2.0.0"), ("1.4.2", "minor", "1.5.0"), ("1.4.2", "patch", "1.4.3"),
        ("1.4.2", "prerelease", "1.4.3-rc.0"), ("2.0.0-rc.1", "prerelease", "2.0.0-rc.2"),
        ("2.0.0-rc.1", "major", "2.0.0"), ("1.4.2-beta", "prerelease", "1.4.2-beta.1"), ("1.4.2+meta", "patch", "1.4.3"),
    ],
)
def test_semver_bump(version: str, part: str, expected: str) -> None:
    assert semver.semver_bump(version, part) == expected  # type: ignore[arg-type]


def test_semver_bump_rejects_bad_label() -> None:
    with pytest.raises(ValueError, match="prerelease_label"):
        semver.semver_bump("1.0.0", "prerelease", prerelease_label="r c")


@pytest.mark.parametrize(
    ("version", "expression", "expected"),
    [
        ("1.4.2", "^1.2.0", True), ("2.0.0", "^1.2.0", False), ("0.2.9", "^0.2.3", True), ("0.3.0", "^0.2.3", False),
        ("1.4.9", "~1.4", True), ("1.5.0", "~1.4.2", False), ("1.9.9", ">=1.0.0 <2.0.0", True),
        ("3.1.0", "1.x || 3.x", True), ("2.0.0", "1.0.0 - 2.0.0", True), ("1.3.0", ">1.2", True), ("1.2.5", ">1.2", False),
        ("1.2.9", "<=1.2", True), ("1.0.0", "*", True), ("1.5.0", "^1.x", True), ("0.5.0", "^0.x", True),
    ],
)
def test_semver_satisfies(version: str, expression: str, expected: bool) -> None:
    assert semver.semver_satisfies(version, expression)["satisfies"] is expected


def test_semver_satisfies_rejects_bad_range() -> None:
    with pytest.raises(ValueError, match="invalid version in range"):
        semver.semver_satisfies("1.0.0", "^1.a")
