"""What a server says of itself, as the catalog gives it (`Catalog.about`). Search no longer reads it: choosing a
need's server by its description was removed in round 4 (docs/search-log.md, "Round 4, second pass")."""

from __future__ import annotations

from lazytools.catalog import Catalog, Group


def test_catalog_about_prefers_what_a_group_says_of_itself_to_its_summary() -> None:
    catalog = Catalog()
    catalog.set_group(Group("a", "One line.", about="One line.\n\nLong instructions."), [])
    catalog.set_group(Group("b", "Only a summary."), [])
    assert catalog.about() == {"a": "One line.\n\nLong instructions.", "b": "Only a summary."}
