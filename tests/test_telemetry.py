"""Traces: the SDK's span per request, lazytools' spans for a search and for each upstream request, and the trace
context carried to the upstream in `_meta`, checked with the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from lazytools.app import build_server
from lazytools.catalog import Catalog
from lazytools.sources.gateway.gateway import open_gateway
from lazytools.telemetry import configure_tracing

from .conftest import make_settings
from .helpers import running_http
from .upstreams.helpers import FAST

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> InMemorySpanExporter:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # once per process: the API allows one global provider
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    return _EXPORTER


def _traced_upstream() -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="where", description="Say the trace context received.",
                                                       input_schema={"type": "object"})])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        meta = ctx.meta or {}
        return types.CallToolResult(content=[types.TextContent(text=str(meta.get("traceparent")))])

    return Server("traced", on_list_tools=list_tools, on_call_tool=call_tool)


def _named(spans: list[ReadableSpan], start: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name.startswith(start)]


async def test_a_call_is_traced_from_the_client_through_to_the_upstream(tmp_path: Path,
                                                                        spans: InMemorySpanExporter) -> None:
    async with running_http(_traced_upstream().streamable_http_app()) as base:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"up": {"url": base + "/mcp"}}}))
        settings = make_settings(config=config)
        catalog = Catalog()
        async with open_gateway(settings, catalog, backoff=FAST) as gateway:
            server = build_server(catalog, settings, front=gateway.front)
            spans.clear()  # the gateway's own listing requests
            async with Client(server, mode="legacy") as client:
                await client.call_tool("search_tools", {"query": "trace context"})
                result = await client.call_tool("invoke_tool", {"tool_name": "up__where", "arguments": {}})
    finished = list(spans.get_finished_spans())
    search = _named(finished, "lazytools search")
    assert len(search) == 1 and search[0].attributes is not None
    assert search[0].attributes["lazytools.search.returned"] >= 1
    served = [s for s in _named(finished, "tools/call") if s.kind == trace.SpanKind.SERVER
              and s.attributes is not None and s.attributes.get("gen_ai.tool.name") == "invoke_tool"]
    assert len(served) == 1  # the SDK's middleware, on lazytools' side
    assert search[0].parent is not None  # the search ran inside lazytools' tools/call span
    upstream = _named(finished, "lazytools upstream up")
    assert len(upstream) == 1 and upstream[0].context.trace_id == served[0].context.trace_id
    # the upstream got the trace context in _meta and its own server span joined the same trace
    traceparent = result.content[0].text if isinstance(result.content[0], types.TextContent) else ""
    trace_id = f"{served[0].context.trace_id:032x}"
    assert traceparent.startswith("00-" + trace_id + "-")
    remote = [s for s in _named(finished, "tools/call where") if s.kind == trace.SpanKind.SERVER]
    assert len(remote) == 1 and remote[0].context.trace_id == served[0].context.trace_id


def test_export_is_configured_only_when_asked() -> None:
    assert configure_tracing({}) is None
    assert configure_tracing({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
                              "OTEL_SDK_DISABLED": "true"}) is None
    assert configure_tracing({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
                              "OTEL_TRACES_EXPORTER": "none"}) is None
