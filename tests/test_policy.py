"""Per-user policy (policy/, server/access.py): two users of two groups, with tokens of a real IdP, reach lazytools
over HTTP in front of two real upstreams; each sees and reaches only its own group's tools, prompts and resources,
by every route, and an edit of the policy file applies while their sessions are open."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from lazytools.app import build_server
from lazytools.catalog import Catalog
from lazytools.errors import ConfigError
from lazytools.identity import ANONYMOUS, Principal, named_principal
from lazytools.policy.file import PolicyFile
from lazytools.policy.rules import Policy, PolicySpec, check_path
from lazytools.server.core import LazyServer
from lazytools.sources.gateway.gateway import open_gateway
from lazytools.transports.http import build_app
from lazytools.uris import UnsafeUriError, uri_forms

from .conftest import make_settings, small_catalog, text_of
from .helpers import _free_port, eventually, running_http
from .idp import IdP, running_idp
from .test_learning import QUERY as LEARNT_QUERY
from .test_learning import notes_catalog
from .upstreams.features import build
from .upstreams.helpers import FAST
from .upstreams.watched import Watched

TWO_TEAMS = """
default = "deny"

[[rules]]
who = ["group:eng"]
allow = { servers = ["eng"] }

[[rules]]
who = ["group:fin"]
allow = { servers = ["fin"] }
deny = { tools = ["fin__slow_*"], prompts = ["fin__secret*"], resources = ["features://fin/secret"] }
"""


@dataclass
class Team:
    idp: IdP
    url: str
    policy: Path
    server: LazyServer

    @asynccontextmanager
    async def user(self, name: str, group: str, *, mode: str = "legacy") -> AsyncIterator[Client]:
        token = self.idp.sign(audience=self.url, sub=name, groups=[group])
        async with httpx2.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(self.url, http_client=http), mode=mode,  # type: ignore[arg-type]
                              cache=None) as client:
                yield client


@asynccontextmanager
async def team(tmp_path: Path, policy: str = TWO_TEAMS, more: dict[str, Any] | None = None) -> AsyncIterator[Team]:
    """`more`: further `mcpServers` entries."""
    async with running_idp() as idp, running_http(build("eng").streamable_http_app()) as eng, \
            running_http(build("fin").streamable_http_app()) as fin:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"eng": {"url": eng + "/mcp"}, "fin": {"url": fin + "/mcp"},
                                                     **(more or {})}}))
        path = tmp_path / "policy.toml"
        path.write_text(policy)
        port = _free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        settings = make_settings(config=config, transport="http", port=port, auth_issuer=idp.issuer,
                                 auth_audience=url, policy=path)
        catalog = Catalog()
        async with open_gateway(settings, catalog, backoff=FAST) as gateway:
            server = build_server(catalog, settings, front=gateway.front)
            async with running_http(build_app(server, settings), port=port):
                yield Team(idp, url, path, server)


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def _description(client: Client) -> str:
    tools = (await client.list_tools()).tools
    return next(tool.description or "" for tool in tools if tool.name == "search_tools")


async def _sees_only(client: Client, own: str, other: str, *, dynamic: bool = True) -> None:
    """Every route shows `own`'s tools, prompts and resources and nothing of `other`'s."""
    manifest = await _description(client)
    assert f"{own} (" in manifest and other not in manifest
    found = await client.call_tool("search_tools", {"query": "echo a text back"})
    assert f"{own}__echo" in _text(found) and other not in _text(found)
    listed = [tool.name for tool in (await client.list_tools()).tools]
    assert (f"{own}__echo" in listed) is dynamic and not [name for name in listed if other in name]
    # named outright, by search, by a call, through invoke_tool, in any case: as if it did not exist
    named = await client.call_tool("search_tools", {"tool_names": [f"{other}__echo", f"{own}__echo"]})
    assert "Unknown tool" in _text(named) and f"{other}__echo'" in _text(named)
    assert _text(named).replace(f"'{other}__echo'", "") .count(other) == 0
    for name in (f"{other}__echo", f"{other.upper()}__ECHO", f"{other.title()}__Echo"):
        for result in (await client.call_tool(name, {"text": "hi"}),
                       await client.call_tool("invoke_tool", {"tool_name": name, "arguments": {"text": "hi"}})):
            assert result.is_error and "Unknown tool" in _text(result), _text(result)
            assert _text(result).replace(f"'{name}'", "").lower().count(other) == 0, _text(result)
    nowhere = await client.call_tool("invoke_tool", {"tool_name": "zzz__echo", "arguments": {}})
    hidden = await client.call_tool("invoke_tool", {"tool_name": f"{other}__echo", "arguments": {}})
    assert _text(hidden).replace(f"{other}__echo", "zzz__echo") == _text(nowhere)  # nothing tells them apart
    group = await client.call_tool("search_tools", {"group": other})
    assert group.is_error and "Unknown group" in _text(group) and _text(group).count(other) == 1
    # prompts, resources, templates and completions
    prompts = [prompt.name for prompt in (await client.list_prompts()).prompts]
    assert prompts and all(name.startswith(f"{own}__") for name in prompts)
    for name in (f"{other}__greet", f"{other.upper()}__greet"):
        with pytest.raises(MCPError, match="Unknown prompt"):
            await client.get_prompt(name, {"who": "x"})
        with pytest.raises(MCPError, match="Unknown prompt"):
            await client.complete(types.PromptReference(name=name), {"name": "who", "value": "A"})
    uris = [str(resource.uri) for resource in (await client.list_resources()).resources]
    assert uris and all(uri.startswith(f"features://{own}/") for uri in uris)
    templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
    assert templates == [f"features://{own}/item/{{id}}"]
    for uri in (f"features://{other}/readme", f"FEATURES://{other.upper()}/readme", f"features://{other}/item/7",
                f"features://{own}/../{other}/readme", f"features://{other}/%72eadme"):
        with pytest.raises(MCPError, match="No upstream server serves"):
            await client.read_resource(uri)
    with pytest.raises(MCPError):
        await client.complete(types.ResourceTemplateReference(uri=f"features://{other}/item/{{id}}"),
                              {"name": "id", "value": "1"})
    readme = await client.read_resource(f"features://{own}/readme")
    assert readme.contents
    if dynamic:  # subscriptions need a session
        with pytest.raises(MCPError, match="No upstream server serves"), pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(f"features://{other}/readme")
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(f"features://{own}/readme")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_two_users_see_and_reach_only_their_own_tools(tmp_path: Path, mode: str) -> None:
    async with team(tmp_path) as t:
        async with t.user("alice", "eng", mode=mode) as alice, t.user("bob", "fin", mode=mode) as bob:
            await _sees_only(alice, "eng", "fin", dynamic=mode == "legacy")
            await _sees_only(bob, "fin", "eng", dynamic=mode == "legacy")
            ok = await alice.call_tool("invoke_tool", {"tool_name": "eng__echo", "arguments": {"text": "hi"}})
            assert not ok.is_error and "hi" in _text(ok)
            # bob's group is denied fin's slow_* tools, its secret prompt and resource: they do not exist for him
            assert "fin__slow_count" not in await _description(bob)
            slow = await bob.call_tool("invoke_tool", {"tool_name": "fin__slow_count", "arguments": {}})
            assert slow.is_error and "Unknown tool" in _text(slow) and "slow_count'" in _text(slow)
            assert "fin__secret_prompt" not in [p.name for p in (await bob.list_prompts()).prompts]
            with pytest.raises(MCPError, match="No upstream server serves"):
                await bob.read_resource("features://fin/secret")


async def test_a_user_of_no_group_sees_nothing_but_the_meta_tools(tmp_path: Path) -> None:
    async with team(tmp_path) as t, t.user("mallory", "guests") as mallory:
        assert sorted(tool.name for tool in (await mallory.list_tools()).tools) == ["invoke_tool", "search_tools"]
        assert "0 are hidden until found" in await _description(mallory)
        found = await mallory.call_tool("search_tools", {"query": "echo"})
        assert _text(found) == "No tool here fits 'echo'; no tool was enabled for it. There are no tools here to search."
        assert (await mallory.list_prompts()).prompts == [] and (await mallory.list_resources()).resources == []


async def test_a_server_that_is_down_is_named_only_to_those_who_may_see_it(tmp_path: Path) -> None:
    """A down server's name and why are told where its tools are missed, but only to a principal its tools are for:
    to anyone else it does not exist, down or up."""
    down = {"ops": {"url": f"http://127.0.0.1:{_free_port()}/mcp", "timeout": 2}}
    policy = TWO_TEAMS + '[[rules]]\nwho = ["group:ops"]\nallow = { servers = ["ops"] }\n'
    async with team(tmp_path, policy, more=down) as t:
        await eventually(lambda: "ops" in t.server.catalog.not_serving())
        async with t.user("alice", "eng") as alice:
            called = await alice.call_tool("invoke_tool", {"tool_name": "ops__restart", "arguments": {}})
            assert called.is_error and "Unknown tool" in _text(called) and "not serving" not in _text(called)
            found = await alice.call_tool("search_tools", {"query": "zqxv wjkp"})
            assert "ops" not in _text(found)


async def test_a_policy_edit_applies_while_sessions_are_open(tmp_path: Path) -> None:
    async with team(tmp_path) as t, t.user("alice", "eng") as alice:
        await alice.call_tool("search_tools", {"tool_names": ["eng__echo"]})
        assert "eng__echo" in [tool.name for tool in (await alice.list_tools()).tools]
        t.policy.write_text(TWO_TEAMS.replace('who = ["group:fin"]', 'who = ["group:fin", "user:alice"]')
                            .replace('allow = { servers = ["eng"] }', 'allow = { tools = ["eng__add"] }'))

        async def fin_visible() -> bool:
            return "fin (" in await _description(alice)

        await eventually(fin_visible)
        listed = [tool.name for tool in (await alice.list_tools()).tools]
        assert "eng__echo" not in listed  # enabled before the edit, gone with it
        called = await alice.call_tool("invoke_tool", {"tool_name": "fin__echo", "arguments": {"text": "x"}})
        assert not called.is_error
        gone = await alice.call_tool("eng__echo", {"text": "x"})
        assert gone.is_error and "Unknown tool" in _text(gone)
        # a broken edit keeps the last good policy
        generation = t.server.gate.policy.current().generation if t.server.gate.policy else -1
        t.policy.write_text("default = 'deny'\n[[rules]]\nwho = ['nobody-knows-this-kind']\n")

        async def refused() -> bool:
            await _description(alice)  # a request: the policy file is looked at as requests come
            policy = t.server.gate.policy
            return policy is not None and policy._failed is not None

        await eventually(refused)
        assert t.server.gate.policy is not None and t.server.gate.policy.current().generation == generation
        assert "fin (" in await _description(alice)


# -- argument constraints and rate limits, in memory (the stdio user as the named principal) ---------------------

def _policy_server(tmp_path: Path, text: str, **settings: Any) -> LazyServer:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return build_server(small_catalog(), make_settings(policy=path, **settings))


async def test_argument_constraints_refuse_what_they_name(tmp_path: Path) -> None:
    server = _policy_server(tmp_path, """
default = "allow"
[[rules]]
who = ["stdio:local"]
deny = { tools = ["reverse_*"] }
arguments = [{ tools = ["get_forecast"], argument = "city", one_of = ["Paris", "Oslo"] }]
""")
    async with Client(server, mode="legacy") as client:
        ok = await client.call_tool("invoke_tool", {"tool_name": "get_forecast", "arguments": {"city": "Oslo"}})
        assert not ok.is_error
        refused = await client.call_tool("invoke_tool", {"tool_name": "get_forecast",
                                                         "arguments": {"city": "Rome"}})
        assert refused.is_error and "Policy refuses this call of get_forecast" in _text(refused)
        hidden = await client.call_tool("invoke_tool", {"tool_name": "reverse_text", "arguments": {"text": "a"}})
        assert hidden.is_error and "Unknown tool" in _text(hidden)
        texts = len(small_catalog().in_group("text"))
        assert f"text ({texts - 1}): " in await _description(client)  # the manifest counts what the user may call


async def test_a_rate_limit_refuses_with_a_clear_error(tmp_path: Path) -> None:
    server = _policy_server(tmp_path, 'default = "allow"\ncalls_per_minute = 3\n')
    async with Client(server, mode="legacy") as client:
        results = [await client.call_tool("invoke_tool", {"tool_name": "word_count", "arguments": {"text": "a b"}})
                   for _ in range(4)]
    assert [r.is_error for r in results] == [False, False, False, True]
    assert "Rate limit: local may make 3 calls per minute; try again in" in _text(results[3])


async def test_a_rule_raises_its_principals_limit(tmp_path: Path) -> None:
    server = _policy_server(tmp_path, 'default = "allow"\ncalls_per_minute = 1\n'
                                      '[[rules]]\nwho = ["kind:stdio"]\ncalls_per_minute = 2\n')
    async with Client(server, mode="legacy") as client:
        results = [await client.call_tool("search_tools", {"query": "words"}) for _ in range(3)]
    assert [r.is_error for r in results] == [False, False, True]


# -- the decisions themselves -----------------------------------------------------------------------------------

def _policy(text: str) -> Policy:
    import tomllib

    return Policy(PolicySpec.model_validate(tomllib.loads(text)))


def _user(name: str = "u", *, groups: tuple[str, ...] = ()) -> Principal:
    return Principal(name=name, kind="oauth", subject=name, issuer="https://idp", groups=frozenset(groups))


def test_deny_wins_and_patterns_ignore_case() -> None:
    policy = _policy('''
[[rules]]
who = ["*"]
allow = { servers = ["github"], resources = ["file:///data/*"] }
[[rules]]
who = ["group:interns"]
deny = { tools = ["GitHub__delete_*"] }
''')
    intern, other = policy.grant_for(_user(groups=("interns",))), policy.grant_for(_user("o"))
    assert other.tool("github__delete_repo", "github") and other.tool("github__x", "github")
    assert not intern.tool("github__delete_repo", "github") and not intern.tool("GITHUB__DELETE_REPO", "github")
    assert intern.tool("github__create_issue", "github") and not intern.tool("slack__post", "slack")
    assert other.resource(uri_forms("file:///data/a.csv"), None)
    for escape in ("file:///data/../etc/passwd", "file:///data/%2e%2e/etc/passwd"):
        with pytest.raises(UnsafeUriError):  # refused before any rule is tried (server/access.py)
            uri_forms(escape)
    assert not other.resource(uri_forms("FILE:///DATA/a.csv"), None)  # an allow is exact about case
    assert policy.grant_for(_user("p")) is other  # principals of the same rules share one grant


def test_a_user_rule_never_matches_a_named_principal_nor_the_other_way_round() -> None:
    policy = _policy("""
[[rules]]
who = ["user:token", "user:local"]
allow = { servers = ["oauth-only"] }
[[rules]]
who = ["token:token", "stdio:local"]
allow = { servers = ["named-only"] }
[[rules]]
who = ["kind:anonymous"]
allow = { servers = ["anonymous-only"] }
""")
    for name in ("token", "local"):  # an OAuth subject that happens to be spelled like a named principal
        oauth = policy.grant_for(_user(name))
        assert oauth.tool("x__a", "oauth-only") and not oauth.tool("x__a", "named-only")
    for named in (named_principal("token", "token"), named_principal("local", "stdio")):
        grant = policy.grant_for(named)
        assert grant.tool("x__a", "named-only") and not grant.tool("x__a", "oauth-only")
    assert not policy.grant_for(named_principal("token", "stdio")).tool("x__a", "named-only")  # kinds kept apart
    anonymous = policy.grant_for(ANONYMOUS)
    assert anonymous.tool("x__a", "anonymous-only") and not anonymous.tool("x__a", "oauth-only")
    assert not policy.grant_for(_user("anonymous")).tool("x__a", "anonymous-only")


@pytest.mark.parametrize(("path", "allowed"), [
    ("/data/shared/a.txt", True), ("/data/shared", True), ("/data/shared/x/../y", True),
    ("/data/shared/../secret", False), ("/data/sharedx/a", False), ("data/shared/a", False),
    ("~/data/shared", False), ("\\data\\shared\\..\\..\\etc", False), ("/data/shared/a\x00b", False),
    ("//data//shared//a", True), ("/DATA/shared/a", False),
])
def test_paths_are_normalised_before_they_are_compared(path: str, allowed: bool) -> None:
    assert check_path(path, ["/data/shared"]) is allowed


def test_a_broken_or_huge_file_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('default = "maybe"\n')
    with pytest.raises(ConfigError, match="default"):
        PolicyFile(path, max_bytes=1024)
    path.write_text('[[rules]]\nwho = ["team:x"]\n')
    with pytest.raises(ConfigError, match="who"):
        PolicyFile(path, max_bytes=1024)
    path.write_text("# " + "x" * 5000)
    with pytest.raises(ConfigError, match="larger than"):
        PolicyFile(path, max_bytes=1024)
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"default": "allow", "rules": [{"who": ["stdio:local"], "calls_per_minute": 5}]}))
    grant = PolicyFile(path, max_bytes=1024).current().grant_for(named_principal("local", "stdio"))
    assert grant.default_allow and grant.calls_per_minute == 5


def test_a_fifo_in_the_policy_files_place_is_refused_not_waited_on(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('default = "allow"\n')
    policy = PolicyFile(path, max_bytes=1024)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    swapped = tmp_path / "swap"
    swapped.symlink_to(fifo)
    swapped.replace(path)  # the policy file is now a symbolic link to a FIFO nobody writes
    reader = threading.Thread(target=policy.reload, daemon=True)
    reader.start()
    reader.join(30)
    hung = reader.is_alive()
    if hung:  # release the blocked open so the thread ends, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
    assert not hung, "reading the policy blocked on a FIFO"
    assert policy.policy.spec.default == "allow" and policy.policy.generation == 0  # the last good one stays


def test_a_read_older_than_the_policy_in_force_is_never_applied(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from lazytools.policy import file

    path = tmp_path / "policy.toml"
    path.write_text('default = "allow"\n')
    policy = PolicyFile(path, max_bytes=1024)
    real = file._read_file
    first_read, release = threading.Event(), threading.Event()

    def slow_first(file: Path, max_bytes: int) -> tuple[bytes, tuple[int, int, int]]:
        found = real(file, max_bytes)
        if not first_read.is_set():
            first_read.set()
            release.wait()  # the old content, read before the edit, lands after the newer read
        return found

    monkeypatch.setattr(file, "_read_file", slow_first)
    stale = threading.Thread(target=policy.reload)
    stale.start()
    first_read.wait()
    path.write_text('default = "deny"\n')
    policy.reload()
    assert policy.policy.spec.default == "deny"
    release.set()
    stale.join()
    assert policy.policy.spec.default == "deny"  # the older read ended last and was dropped


@pytest.mark.process
async def test_completions_count_against_the_rate_limit(tmp_path: Path) -> None:
    import sys

    from .upstreams.helpers import opened

    path = tmp_path / "policy.toml"
    path.write_text('default = "allow"\ncalls_per_minute = 2\n')
    features = str(Path(__file__).resolve().parent / "upstreams" / "features.py")
    config = {"feat": {"command": sys.executable, "args": [features, "--name", "feat"]}}
    async with opened(tmp_path, config, policy=path) as o, Client(o.server, mode="legacy") as client:
        ref = types.PromptReference(name="feat__greet")
        for _ in range(2):
            assert (await client.complete(ref, {"name": "who", "value": "A"})).completion.values == ["Ada", "Alan"]
        with pytest.raises(MCPError, match="Rate limit"):
            await client.complete(ref, {"name": "who", "value": "A"})


SUBSCRIBABLE = """
default = "deny"
[[rules]]
who = ["*"]
allow = { servers = ["*"], resources = ["*"] }
"""


async def test_a_subscription_to_a_resource_the_policy_hides_since_hears_no_more_and_is_left(
        tmp_path: Path) -> None:
    watched = Watched()
    a, b = watched.uris
    heard: dict[str, int] = {}

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard[str(message.params.uri)] = heard.get(str(message.params.uri), 0) + 1

    async with running_http(watched.server.streamable_http_app()) as upstream:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"watch": {"url": f"{upstream}/mcp"}}}))
        path = tmp_path / "policy.toml"
        path.write_text(SUBSCRIBABLE)
        port = _free_port()
        settings = make_settings(config=config, transport="http", port=port, policy=path)
        catalog = Catalog()
        async with open_gateway(settings, catalog, backoff=FAST) as gateway:
            server = build_server(catalog, settings, front=gateway.front)
            async with running_http(build_app(server, settings), port=port), \
                    Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", message_handler=on_message) as client:
                await eventually(lambda: _lists(client, a))
                with pytest.warns(MCPDeprecationWarning):
                    await client.session.subscribe_resource(a)
                with pytest.warns(MCPDeprecationWarning):
                    await client.session.subscribe_resource(b)
                await watched.change(a)
                await eventually(lambda: heard.get(a) == 1)
                # The policy hides `a` now; the client sends nothing more: the next update is not delivered, and
                # the upstream subscription, which nobody else wants, is left. `b` is still heard.
                path.write_text(SUBSCRIBABLE + 'deny = { resources = ["watch://watch/a"] }\n')
                assert server.gate.policy is not None
                server.gate.policy.reload()
                assert not server.gate.access(ANONYMOUS).resource(a, "watch")
                await watched.change(a)
                await watched.change(b)
                await eventually(lambda: heard.get(b) == 1 and watched.subscribers(a) == 0)
                assert heard.get(a) == 1 and watched.subscribers(b) == 1


async def _lists(client: Client, uri: str) -> bool:
    return uri in [str(r.uri) for r in (await client.list_resources()).resources]


async def test_learning_counts_an_oauth_user_once_however_many_sessions_they_open(tmp_path: Path) -> None:
    # Sessions cost nothing: one user opening four of them once taught every other user a suggestion.
    async with running_idp() as idp:
        port = _free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        settings = make_settings(transport="http", port=port, auth_issuer=idp.issuer, auth_audience=url,
                                 learn=True, cache_dir=tmp_path)
        server = build_server(notes_catalog(), settings)

        async def pattern(user: str) -> str:
            """`user` searches their notes, then sends an email: what the search said."""
            token = idp.sign(audience=url, sub=user)
            async with httpx2.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {token}"}) as http, \
                    Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                found = text_of(await client.call_tool("search_tools", {"query": LEARNT_QUERY}))
                assert not (await client.call_tool("search_notes", {"words": "budget"})).is_error
                await client.call_tool("search_tools", {"tool_names": ["send_email"]})
                assert not (await client.call_tool("send_email", {"to": "friend@example.com"})).is_error
            assert server.usage is not None and await anyio.to_thread.run_sync(server.usage.flushed)
            return found

        async with running_http(build_app(server, settings), port=port):
            for _ in range(4):
                assert "search_notes, from past sessions" not in await pattern("mallory")
            await pattern("alice")
            assert "search_notes, from past sessions" not in await pattern("bob")  # two users showed it before
            assert "search_notes, from past sessions" in await pattern("carol")  # three did


DENYING = 'default = "allow"\n[[rules]]\nwho = ["stdio:local"]\ndeny = { tools = ["reverse_*"] }\n'


async def test_a_policy_rewritten_in_place_is_not_applied_half_written(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor that truncates the file and writes it again leaves, for a moment, its first line alone: it parses
    (allow everything), and 10 calls of a denied tool were served. A change applies once the file settled."""
    from lazytools.policy import file

    monkeypatch.setattr(file, "CHECK_EVERY", 0.0)  # every request looks at the file
    server = _policy_server(tmp_path, DENYING, policy_settle=30.0)
    path = tmp_path / "policy.toml"
    call = {"tool_name": "reverse_text", "arguments": {"text": "ab"}}
    async with Client(server, mode="legacy") as client:
        assert (await client.call_tool("invoke_tool", call)).is_error
        with open(path, "r+") as rewritten:  # in place: same inode, first line written, the rest not yet
            rewritten.truncate(0)
            rewritten.write('default = "allow"\n')
        served = [not (await client.call_tool("invoke_tool", call)).is_error for _ in range(10)]
        assert served == [False] * 10
        path.write_text(DENYING.replace("reverse_*", "word_count"))  # now complete, and written a minute ago
        old = path.stat().st_mtime - 60
        os.utime(path, (old, old))
        assert not (await client.call_tool("invoke_tool", call)).is_error  # the complete edit applies
        counted = await client.call_tool("invoke_tool", {"tool_name": "word_count", "arguments": {"text": "a b"}})
        assert counted.is_error
    assert server.gate.policy is not None and server.gate.policy.policy.generation == 1  # the half file never was


def test_a_policy_file_that_changes_between_two_reads_is_not_applied(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from lazytools.policy import file

    path = tmp_path / "policy.toml"
    path.write_text(DENYING)
    policy = PolicyFile(path, max_bytes=4096, settle=0.0)
    real = file._read_file
    reads: list[int] = []

    def writer_between(where: Path, max_bytes: int) -> tuple[bytes, tuple[int, int, int]]:
        found = real(where, max_bytes)
        reads.append(1)
        if len(reads) == 1:
            where.write_text(DENYING + 'calls_per_minute = 5\n')  # the writer goes on between the two reads
        return found

    path.write_text('default = "allow"\n')
    monkeypatch.setattr(file, "_read_file", writer_between)
    policy.reload()
    assert policy.policy.generation == 0 and policy.policy.spec.rules  # neither read applied
    policy.reload()
    assert policy.policy.generation == 1 and policy.policy.spec.rules[0].calls_per_minute == 5
