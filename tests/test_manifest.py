"""The manifest in search_tools' description: one clean line per group, placeholders dropped."""

from __future__ import annotations

from lazytools import Catalog, Group
from lazytools.manifest import manifest

from .fixtures.catalogs import tool


def catalog(*groups: tuple[str, str, int]) -> Catalog:
    result = Catalog()
    for name, summary, size in groups:
        result.set_group(Group(name, summary), [tool(f"{name}_{verb}_item", f"{verb} an item.", name)
                                                for verb in ("get", "list", "create", "delete", "update")[:size]])
    return result


def test_group_lines_are_plain_first_sentences() -> None:
    text = manifest(catalog(
        ("everything", "# Everything Server – Server Instructions\n\nAudience: These instructions are for an LLM.\n"
                       "Echo and sum numbers for **testing**. More.", 5),
        ("weather", "Forecasts from the national service, see [docs](https://example.com).", 2),
    ))
    assert text.splitlines() == [
        "everything (5): Echo and sum numbers for testing.",
        "weather (2): Forecasts from the national service, see docs.",
    ]
    assert "#" not in text and "**" not in text and "](" not in text


def test_a_summary_every_group_shares_is_a_placeholder_and_is_dropped() -> None:
    placeholder = "Tools from tools.jsonl (no implementation)"
    text = manifest(catalog(("alpha", placeholder, 2), ("beta", placeholder, 5), ("gamma", "Real words.", 1)))
    assert placeholder not in text
    assert text.splitlines() == [
        "alpha (2): alpha_get_item, alpha_list_item",  # small groups name their tools
        "beta (5): item, get, list, create, delete, update",  # larger ones the words their names use most
        "gamma (1): Real words.",
    ]


def test_a_heading_only_summary_falls_back_to_the_tools() -> None:
    assert manifest(catalog(("docs", "# Docs Server", 2))) == "docs (2): docs_get_item, docs_list_item"
