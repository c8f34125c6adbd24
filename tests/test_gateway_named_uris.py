"""URIs an upstream names in its results (which route reads of them) are bounded by bytes, per URI and in all."""

from __future__ import annotations

import sys
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from lazytools.sources.gateway.offerings import MAX_NAMED_URI, NamedUris

from .upstreams.helpers import opened

FEATURES = Path(__file__).resolve().parent / "upstreams" / "features.py"


def test_a_uri_longer_than_the_bound_is_not_remembered() -> None:
    named = NamedUris()
    huge = "hidden://" + "x" * 1_000_000
    for _ in range(300):  # stateless calls, each echoing a megabyte URI: about 300 MB were kept
        named.add(None, [huge])
    assert not named.named(None, huge) and named.size == 0
    fitting = "hidden://" + "y" * (MAX_NAMED_URI - len("hidden://"))
    named.add(None, [fitting])
    assert named.named(None, fitting) and 0 < named.size < 2 * MAX_NAMED_URI


def test_one_session_and_all_of_them_are_bounded_in_bytes() -> None:
    named = NamedUris(sessions=1024, max_bytes=1 << 20, per_session_bytes=256 << 10)
    uris = [f"hidden://{i}/" + "z" * 8000 for i in range(100)]  # 800 KB for one session
    named.add("a", uris)
    assert named.size <= 256 << 10
    assert named.named("a", uris[-1]) and not named.named("a", uris[0])  # the oldest went first
    for session in range(20):  # 20 sessions at their own bound: 5 MB, over the total
        named.add(f"s{session}", uris)
    assert named.size <= 1 << 20
    assert named.named("s19", uris[-1]) and not named.named("a", uris[-1])  # the least recently active went
    for session in ["a", *(f"s{i}" for i in range(20))]:
        named.forget(session)
    assert named.size == 0


@pytest.mark.process
async def test_an_upstream_naming_an_oversized_uri_does_not_make_it_readable(tmp_path: Path) -> None:
    entry = {"command": sys.executable, "args": [str(FEATURES), "--name", "feat"]}
    async with opened(tmp_path, {"feat": entry}) as o:
        async with Client(o.server, mode="legacy", client_info=types.Implementation(name="claude-ai", version="1")) \
                as c:
            short, long = "hidden-feat://secret", "hidden-feat://secret?" + "x" * MAX_NAMED_URI
            for uri in (short, long):
                await c.call_tool("invoke_tool", {"tool_name": "feat__links", "arguments": {"uri": uri}})
            assert (await c.read_resource(short)).contents[0].text == "feat secret"  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="No upstream server serves resource"):
                await c.read_resource(long)
