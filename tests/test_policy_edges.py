"""Policy against hostile claims and arguments (issue #30, items 11 and 12), through the real HTTP server with tokens
of a real identity provider (tests/idp.py): a groups claim given as one string is one group, unless a setting says
how to split it; an `under` path constraint refuses an empty list as it refuses a missing argument."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from lazytools import FunctionGroup, Group
from lazytools.app import build_server
from lazytools.transports.http import build_app

from .conftest import make_settings, small_catalog, text_of
from .helpers import _free_port, running_http
from .idp import running_idp
from .test_auth import Served, served

ENGINEERING_ONLY = """
default = "deny"
[[rules]]
who = ["group:engineering"]
allow = { servers = ["weather"] }
[[rules]]
who = ["group:Ex engineering"]
allow = { servers = ["text"] }
"""

UNDER = """
default = "allow"
[[rules]]
who = ["*"]
arguments = [{ tools = ["read_files"], argument = "paths", under = ["/srv/data"] }]
"""


@asynccontextmanager
async def served_files(**overrides: Any) -> AsyncIterator[Served]:
    """`served`, with a tool that reads a path or a list of paths (its schema takes anything, as many do)."""
    files = FunctionGroup("files", summary="Files.")

    @files.tool
    def read_files(paths: Any) -> str:
        """Read files; with no paths, every file of the data root."""
        return "read: " + (", ".join(paths) if isinstance(paths, list) and paths else "EVERYTHING")

    catalog = small_catalog()
    catalog.set_group(Group(files.group, files.summary), files.entries)
    async with running_idp() as idp:
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        settings = make_settings(transport="http", port=port, auth_issuer=idp.issuer, auth_audience=base + "/mcp",
                                 auth_fetch_timeout=60.0, **overrides)
        async with running_http(build_app(build_server(catalog, settings), settings), port=port):
            yield Served(idp, base + "/mcp", base)


@asynccontextmanager
async def as_user(s: Served, **claims: Any) -> AsyncIterator[Client]:
    token = s.idp.sign(audience=s.url, **claims)
    async with httpx2.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {token}"}) as http, \
            Client(streamable_http_client(s.url, http_client=http), mode="legacy") as client:
        yield client


async def _forecast(client: Client) -> tuple[bool, str]:
    result = await client.call_tool("invoke_tool", {"tool_name": "get_forecast", "arguments": {"city": "Oslo"}})
    return result.is_error, text_of(result)


async def test_a_groups_claim_given_as_one_string_is_one_group(tmp_path: Path) -> None:
    """Before: "Ex engineering" was split on its space and satisfied `group:engineering`."""
    policy = tmp_path / "policy.toml"
    policy.write_text(ENGINEERING_ONLY)
    async with served(policy=policy) as s:
        async with as_user(s, groups="Ex engineering") as ex:
            refused, text = await _forecast(ex)
            assert refused and "Unknown tool" in text, text
            counted = await ex.call_tool("invoke_tool", {"tool_name": "word_count", "arguments": {"text": "a b"}})
            assert not counted.is_error  # the group with the space is the one its name says
        async with as_user(s, groups=["engineering"]) as engineer:
            refused, text = await _forecast(engineer)
            assert not refused, text


async def test_the_groups_claims_shape_is_a_setting(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(ENGINEERING_ONLY)
    with caplog.at_level(logging.WARNING):
        async with served(policy=policy, auth_groups_format="comma") as s:
            async with as_user(s, groups="sales, engineering") as engineer:
                refused, text = await _forecast(engineer)
                assert not refused, text
        assert not [r for r in caplog.records if "LAZYTOOLS_AUTH_GROUPS_FORMAT" in r.getMessage()]
        async with served(policy=policy, auth_groups_format="space") as s:
            async with as_user(s, groups="sales engineering") as engineer:
                refused, text = await _forecast(engineer)
                assert not refused, text
    warned = [r.getMessage() for r in caplog.records if "LAZYTOOLS_AUTH_GROUPS_FORMAT=space" in r.getMessage()]
    assert len(warned) == 1 and "group:Ex engineering" in warned[0], warned


@pytest.mark.parametrize("value", [[], "", {}, 7, None, [7], ["/srv/data/a", []]])
async def test_an_under_constraint_refuses_an_empty_list_or_a_value_that_is_not_a_path(
        tmp_path: Path, value: Any) -> None:
    """Before: `paths: []` passed the constraint (no item was outside /srv/data), and the tool read everything."""
    policy = tmp_path / "policy.toml"
    policy.write_text(UNDER)
    async with served_files(policy=policy) as s, as_user(s) as client:
        refused = await client.call_tool("invoke_tool", {"tool_name": "read_files", "arguments": {"paths": value}})
        assert refused.is_error and "must be a path under /srv/data" in text_of(refused), text_of(refused)
        allowed = await client.call_tool("invoke_tool", {"tool_name": "read_files",
                                                         "arguments": {"paths": ["/srv/data/notes.txt"]}})
        assert not allowed.is_error and "read: /srv/data/notes.txt" in text_of(allowed), text_of(allowed)
