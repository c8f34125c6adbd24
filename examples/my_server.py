"""A server author's own lazy MCP server: register typed functions, serve them over stdio.

Run it with `python examples/my_server.py`; point a client at that command.
"""

from __future__ import annotations

import sys
from typing import Annotated

import anyio
from pydantic import Field

from lazytools import Catalog, FunctionGroup, Settings, build_server
from lazytools.transports import serve_stdio

inventory = FunctionGroup("inventory", summary="Stock levels and reorders for the warehouse.")
STOCK = {"widget": 12, "gadget": 0}


@inventory.tool
def check_stock(item: Annotated[str, Field(description="Item name, e.g. widget")]) -> dict[str, int | str]:
    """Check how many units of an item are in stock."""
    if item not in STOCK:
        raise ValueError(f"unknown item {item!r}; known: {', '.join(sorted(STOCK))}")
    return {"item": item, "units": STOCK[item]}


@inventory.tool
def reorder_item(item: str, units: Annotated[int, Field(gt=0, le=1000)]) -> str:
    """Place a reorder for an item with the supplier."""
    return f"ordered {units} x {item}"


def main() -> int:
    catalog = Catalog()
    catalog.add(inventory)
    try:
        anyio.run(serve_stdio, build_server(catalog, Settings()))
    except KeyboardInterrupt:  # Ctrl-C: stop quietly, with the status a shell expects of an interrupted command
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
