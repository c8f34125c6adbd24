"""Resource URIs through the gateway against hostile clients and upstreams (issue #20, items 3, 8 and 12): encoded
URIs against `exclude`, updates that cross sessions or servers, and a later server capturing an earlier one's URIs.

Real upstreams: tests/upstreams/documents.py (the SDK's `MCPServer`, whose template match percent-decodes) and
tests/upstreams/features.py (subscriptions), over stdio.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from lazytools.uris import UnsafeUriError, normalised

from .conftest import text_of
from .helpers import eventually
from .upstreams.helpers import Opened, opened

UPSTREAMS = Path(__file__).resolve().parent / "upstreams"

pytestmark = pytest.mark.process


def documents(name: str, *claims: str, **options: Any) -> dict[str, Any]:
    args = [str(UPSTREAMS / "documents.py"), "--name", name]
    for uri in claims:
        args += ["--claim", uri]
    return {"command": sys.executable, "args": args, **options}


def features(name: str, **options: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(UPSTREAMS / "features.py"), "--name", name], **options}


def _text(result: types.ReadResourceResult) -> str:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


# -- item 3: exclude against encoded URIs ---------------------------------------------------------------------------


@pytest.mark.parametrize("uri", [
    "docs://one/%73ecrets",  # the template match decodes %73: the page `secrets`, whose listing is excluded
    "DOCS://ONE/secrets",
    "docs://one/./secrets",
    "file:///home/u/%70rivate/key",
    "file:///home/u/public/../private/key",
    "file:///home/u/public/%2E%2E/private/key",
    "file:///home//u/private/key",
    "FILE:///home/u/private/key",
    "file:///home/u/PRIVATE/key",  # a case-insensitive file system reads it as `private`
    "file:///home/u%2Fprivate/key",  # {+path} decodes %2F into a new segment
    "file:///home/u/private%2Fkey",
    "file:///home/u/%252570rivate/key",  # a server that decodes twice
    "file:///home/u/private/key%00.txt",
    "file:///home/u/%zzprivate/key",
])
async def test_exclude_is_not_bypassed_by_an_encoded_uri(tmp_path: Path, uri: str) -> None:
    listed = "file:///home/u/%70rivate/listed"
    config = {"one": documents("one", listed, exclude=["secrets", "file:///home/u/private/*"])}
    async with opened(tmp_path, config) as o, Client(o.server, mode="legacy") as client:
        resources = [str(r.uri) for r in (await client.list_resources()).resources]
        assert resources == ["docs://one/public"]  # nor listed in a form the exclusion missed
        assert _text(await client.read_resource("docs://one/public")) == "one public page"
        assert _text(await client.read_resource("docs://one/%70ublic")) == "one public page"
        assert _text(await client.read_resource("file:///home/u/public/key")) == "one file u/public/key"
        with pytest.raises(MCPError, match="No upstream server serves resource"):
            await client.read_resource(uri)


async def test_a_server_without_exclusions_gets_encoded_uris_as_they_are(tmp_path: Path) -> None:
    """Only a server with exclusions refuses what cannot be normalised: the next one that serves it still can."""
    config = {"one": documents("one", exclude=["file:///home/u/private/*"]), "two": documents("two")}
    async with opened(tmp_path, config) as o, Client(o.server, mode="legacy") as client:
        assert _text(await client.read_resource("file:///home/a%2Fb")) == "two file a/b"
        assert _text(await client.read_resource("file:///home/u/%70rivate/key")) == "two file u/private/key"
        assert _text(await client.read_resource("file:///home/u/public/key")) == "one file u/public/key"


@pytest.mark.parametrize(("uri", "form"), [
    ("docs://Page/%7e%41%2e/./a//b/../c", "docs://page/~A./a/c"),
    ("file:///a/b/..", "file:///a/"),
    ("x:///a?q=%2f#%3a", None),
    ("x:///a?q=%3f#%3a", "x:///a?q=%3F#%3A"),
    ("file:///a%5Cb", None),
    ("file:///a\\b", None),
    ("file:///a%7F", None),
    ("file:///a%2", None),
])
def test_uri_normalisation(uri: str, form: str | None) -> None:
    if form is None:
        with pytest.raises(UnsafeUriError):
            normalised(uri)
    else:
        assert normalised(uri) == form


# -- item 8: resources/updated stays with the connection it came from -----------------------------------------------


def _session(o: Opened, seen: list[str]) -> Client:
    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            seen.append(str(message.params.uri))

    return Client(o.server, mode="legacy", message_handler=on_message,
                  client_info=types.Implementation(name="Visual Studio Code", version="1"))


async def _subscribe(client: Client, uri: str) -> None:
    with pytest.warns(MCPDeprecationWarning):
        await client.session.subscribe_resource(uri)


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    await client.call_tool("search_tools", {"tool_names": [tool]})
    return text_of(await client.call_tool(tool, arguments))


async def _settled(clients: list[Client], condition: Callable[[], bool]) -> None:
    """Wait for `condition`, then a round trip on every session: anything sent to them has arrived by then."""
    await eventually(condition)
    for client in clients:
        await client.list_tools()


async def test_a_per_session_upstreams_update_reaches_only_its_own_session(tmp_path: Path) -> None:
    uri = "features://feat/readme"
    first_seen: list[str] = []
    second_seen: list[str] = []
    async with opened(tmp_path, {"feat": features("feat", scope="session")}) as o, \
            _session(o, first_seen) as first, _session(o, second_seen) as second:
        await _subscribe(first, uri)
        await _subscribe(second, uri)
        assert await _call(first, "feat__touch", {"uri": uri}) == "announced"  # from the first session's process
        await _settled([first, second], lambda: first_seen == [uri])
        assert await _call(second, "feat__touch", {"uri": uri}) == "announced"
        await _settled([first, second], lambda: second_seen == [uri])
        assert (first_seen, second_seen) == ([uri], [uri])


async def test_a_server_cannot_announce_updates_of_another_servers_uri(tmp_path: Path) -> None:
    uri = "features://one/readme"
    seen: list[str] = []
    async with opened(tmp_path, {"one": features("one"), "two": documents("two")}) as o, \
            _session(o, seen) as client:
        await _subscribe(client, uri)
        assert await _call(client, "two__announce", {"uri": uri}) == "announced"  # two does not serve it
        assert await _call(client, "one__touch", {"uri": uri}) == "announced"
        await _settled([client], lambda: seen == [uri])
        assert seen == [uri]


# -- item 12: a later server's listing does not capture an earlier server's URIs ------------------------------------


async def test_a_later_servers_listing_cannot_capture_an_earlier_servers_template(tmp_path: Path) -> None:
    captured = "docs://one/captured"
    config = {"one": documents("one"), "two": documents("two", captured, "docs://two-only/x")}
    async with opened(tmp_path, config) as o, Client(o.server, mode="legacy") as client:
        assert _text(await client.read_resource(captured)) == "one has no page captured"  # one's template serves it
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert captured not in listed  # not listed as two's: a read would not reach two
        assert "docs://two-only/x" in listed
        assert _text(await client.read_resource("docs://two-only/x")) == "two claims docs://two-only/x"


# -- round 2, F2: config order across listings, templates and named URIs ----------------------------------------------


def claims(name: str, *flags: str, **options: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(UPSTREAMS / "claims.py"), name, *flags], **options}


async def _link(client: Client, server: str, *uris: str) -> None:
    await client.call_tool("invoke_tool", {"tool_name": f"{server}__link", "arguments": {"uris": list(uris)}})


@pytest.mark.parametrize("later", [
    ("--template", "{+all}", "--template", "memo://{+rest}"),  # catch-all templates
    # listings of one's URIs (and one of its own)
    ("--list", "memo://one/note-42", "--list", "https://intranet.example/doc/7", "--list", "memo://evil/own"),
])
async def test_a_later_server_cannot_take_the_uris_an_earlier_one_named(
        tmp_path: Path, later: tuple[str, ...], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    named = ["memo://one/note-42", "https://intranet.example/doc/7"]
    config = {"one": claims("one"), "evil": claims("evil", *later)}
    async with opened(tmp_path, config) as o, Client(o.server, mode="legacy") as client:
        await _link(client, "one", *named)
        for uri in named:
            assert _text(await client.read_resource(uri)) == f"one serves {uri}"
        # A URI one never named still goes to evil, which claims it.
        assert _text(await client.read_resource("memo://evil/own")) == "evil serves memo://evil/own"
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert not set(named) & set(listed)  # not listed as evil's: a read would not reach evil
        async with Client(o.server, mode="legacy") as other:  # another session: one named nothing there
            if "--list" in later:
                assert _text(await other.read_resource(named[0])) == f"evil serves {named[0]}"
    catch_all = [r.getMessage() for r in caplog.records if "matches URIs of any scheme" in r.getMessage()]
    assert len(catch_all) == ("{+all}" in later), catch_all  # warned once, at listing; `memo://{+rest}` is not one
