"""GET /metrics (server/metrics.py): the counts after a known sequence of requests, read with prometheus-client's
own parser; the endpoint is protected like /mcp."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from lazytools.app import build_server
from lazytools.catalog import Catalog
from lazytools.sources.gateway.gateway import open_gateway
from lazytools.transports.http import build_app

from .conftest import make_settings
from .helpers import _free_port, running_http
from .upstreams.features import build
from .upstreams.helpers import FAST

TOKEN = "metrics-test-token-0123456789"


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def test_metrics_count_requests_calls_searches_conversions_and_refusals(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('default = "allow"\ncalls_per_minute = 6\n[[rules]]\nwho = ["*"]\n'
                      'deny = { tools = ["feat__slow_*"] }\n')
    async with running_http(build("feat").streamable_http_app()) as upstream:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"feat": {"url": upstream + "/mcp"}}}))
        settings = make_settings(config=config, transport="http", policy=policy,
                                 auth_token=SecretStr(TOKEN))
        catalog = Catalog()
        async with open_gateway(settings, catalog, backoff=FAST) as gateway:
            server = build_server(catalog, settings, front=gateway.front)
            async with running_http(build_app(server, settings)) as base:
                headers = {"Authorization": f"Bearer {TOKEN}"}
                async with httpx2.AsyncClient(timeout=60, headers=headers) as http:
                    async with httpx2.AsyncClient(timeout=60) as anonymous:
                        assert (await anonymous.get(base + "/metrics")).status_code == 401
                    async with Client(streamable_http_client(base + "/mcp", http_client=http),  # type: ignore[arg-type]
                                      mode="legacy") as client:
                        await client.call_tool("search_tools", {"query": "echo a text back"})  # 1
                        await client.call_tool("feat__echo", {"text": "a"})  # 2: converts the search
                        await client.call_tool("feat__echo", {"text": "b"})  # 3: counted once per search
                        await client.call_tool("invoke_tool", {"tool_name": "feat__slow_count", "arguments": {}})  # 4
                        await client.call_tool("invoke_tool", {"tool_name": "nope", "arguments": {}})  # 5
                        await client.call_tool("feat__echo", {"text": "c"})  # 6
                        await client.call_tool("feat__echo", {"text": "d"})  # 7: over the limit
                        await client.list_tools()
                        response = await http.get(base + "/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    s = _samples(response.text)
    assert s[("lazytools_searches_total", (("outcome", "ok"),))] == 1
    assert s[("lazytools_tool_calls_total", (("outcome", "ok"), ("server", "feat"), ("tool", "feat__echo")))] == 3
    assert s[("lazytools_tool_calls_total", (("outcome", "error"), ("server", "feat"), ("tool", "feat__echo")))] == 1
    # a hidden tool and an unknown one are both "(other)": a counter must not tell the caller a hidden tool exists
    assert s[("lazytools_tool_calls_total", (("outcome", "error"), ("server", "(other)"), ("tool", "(other)")))] == 2
    assert not any("slow_count" in str(key) for key in s)
    assert s[("lazytools_tool_call_seconds_count", (("server", "feat"),))] == 4
    assert s[("lazytools_search_conversions_total", ())] == 1
    assert s[("lazytools_requests_total", (("method", "tools/call"), ("outcome", "ok")))] == 4
    assert s[("lazytools_requests_total", (("method", "tools/call"), ("outcome", "error")))] == 3
    assert s[("lazytools_policy_refusals_total", (("kind", "tool"),))] == 1
    assert s[("lazytools_rate_limited_total", ())] == 1
    assert s[("lazytools_sessions_open", ())] == 1
    assert s[("lazytools_session_enabled_tools_count", ())] == 1
    assert s[("lazytools_session_enabled_tools_bucket", (("le", "0"),))] == 0
    assert s[("lazytools_session_enabled_tools_bucket", (("le", "+Inf"),))] == 1
    assert s[("lazytools_upstream_up", (("server", "feat"),))] == 1
    assert s[("lazytools_upstream_reconnects_total", (("server", "feat"),))] == 0
    assert not any("echo a text" in str(key) for key in s)  # no query in any label


@pytest.mark.parametrize(("policy", "scope", "scopes", "status"), [
    (True, None, "tools", 403),  # under a policy, metrics are for operators: the default scope
    (True, None, "tools lazytools:metrics", 200),
    (True, "ops", "tools lazytools:metrics", 403),  # the setting names the scope
    (True, "ops", "tools ops", 200),
    (True, "", "tools", 200),  # empty: any valid token, as without a policy
    (False, None, "tools", 200),
])
async def test_metrics_need_an_operator_scope_under_a_policy(tmp_path: Path, policy: bool, scope: str | None,
                                                             scopes: str, status: int) -> None:
    from .conftest import small_catalog
    from .idp import running_idp

    path = tmp_path / "policy.toml"
    path.write_text('default = "allow"\n')
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    async with running_idp() as idp:
        settings = make_settings(transport="http", port=port, auth_issuer=idp.issuer, auth_audience=url,
                                 policy=path if policy else None, metrics_scope=scope)
        server = build_server(small_catalog(), settings)
        async with running_http(build_app(server, settings), port=port) as base:
            async with httpx2.AsyncClient(timeout=60) as http:
                answer = await http.get(base + "/metrics", headers={
                    "Authorization": f"Bearer {idp.sign(audience=url, scope=scopes)}"})
    assert answer.status_code == status, answer.text
    assert ("lazytools_requests" in answer.text) is (status == 200)


async def test_metrics_can_be_turned_off() -> None:
    from .conftest import small_catalog

    server = build_server(small_catalog(), make_settings(metrics=False))
    async with running_http(build_app(server, make_settings(metrics=False))) as base:
        async with httpx2.AsyncClient(timeout=60) as http:
            assert (await http.get(base + "/metrics")).status_code == 404
