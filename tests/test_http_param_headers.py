"""2026-07-28 `Mcp-Param-*` headers over HTTP: a tool whose schema declares one (`x-mcp-header`) has a call whose
header disagrees with its argument refused (400, before the tool runs); a schema that declares none, the meta-tools'
included, leaves headers unchecked (`LazyServer.input_schema_of` gives the transport no schema to walk)."""

from __future__ import annotations

from typing import Any

import httpx2
import mcp_types as types

from lazytools import Catalog, Group, build_server
from lazytools.entry import ToolEntry
from lazytools.transports.http import build_app

from .conftest import make_settings
from .helpers import running_http

HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
           "mcp-method": "tools/call"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
DECLARED = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"]}


def _catalog(ran: list[str]) -> Catalog:
    async def regional(arguments: dict[str, Any]) -> types.CallToolResult:
        ran.append(arguments["region"])
        return types.CallToolResult(content=[types.TextContent(text=f"served {arguments['region']}")])

    catalog = Catalog()
    catalog.set_group(Group("geo", "Regional tools."), [ToolEntry(
        name="regional_status", group="geo", description="The status of a region's services.",
        input_schema=DECLARED, call=regional)])
    return catalog


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": name, "_meta": META, "arguments": arguments}}


async def test_a_declared_header_is_checked_and_an_undeclared_one_is_not() -> None:
    ran: list[str] = []
    server = build_server(_catalog(ran), make_settings(transport="http", mode="proxy", always_available_tools=["regional_status"]))
    app = build_app(server, server.settings)
    async with running_http(app) as base, httpx2.AsyncClient(timeout=60) as http:
        await server.index.ready()
        url = base + "/mcp"
        native = {**HEADERS, "mcp-name": "regional_status"}
        agreeing = await http.post(url, json=_call("regional_status", {"region": "eu"}),
                                   headers={**native, "mcp-param-region": "eu"})
        disagreeing = await http.post(url, json=_call("regional_status", {"region": "eu"}),
                                      headers={**native, "mcp-param-region": "us"})
        search = await http.post(url, json=_call("search_tools", {"query": "status of a region"}),
                                 headers={**HEADERS, "mcp-name": "search_tools", "mcp-param-region": "us"})
    assert agreeing.status_code == 200 and "served eu" in agreeing.text
    assert disagreeing.status_code == 400 and "Region" in disagreeing.text
    assert ran == ["eu"]  # the refused call never reached the tool
    assert search.status_code == 200 and "regional_status" in search.text
