"""The gateway with real upstream servers (stdio and streamable HTTP): aggregation, names, filters, pinning, parity."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from lazytools import ConfigError, ToolEntry
from lazytools.app import open_catalog, open_server
from lazytools.manifest import manifest
from lazytools.toolnames import MAX_NAME_LENGTH

from .conftest import Recorder, client, make_settings, text_of
from .helpers import eventually, running_http, tool_names
from .upstreams.helpers import TOY, direct, http_toy, opened, toy
from .upstreams.toy import LONG_NAME, WEIRD_NAME

pytestmark = pytest.mark.process  # every test here starts lazytools or an upstream as a child process

NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


async def test_servers_are_aggregated_one_group_each_with_their_own_descriptions(tmp_path: Path) -> None:
    async with http_toy("gamma", tools=["echo", "read_file"], description="Gamma serves things over HTTP.") as url:
        servers = {
            "alpha": toy("alpha", "--tools", "echo,read_file", "--instructions", "Alpha keeps notes. Long text."),
            "beta": toy("beta", "--tools", "read_file,add"),
            "gamma": {"url": url},
            "delta": toy("delta", "--tools", "echo", "--description", "Ignored.", description="Delta from config."),
        }
        async with opened(tmp_path, servers) as o:
            assert [g.name for g in o.catalog.groups] == ["alpha", "beta", "gamma", "delta"]
            summaries = {g.name: g.summary for g in o.catalog.groups}
            assert summaries == {"alpha": "Alpha keeps notes.", "beta": "", "gamma": "Gamma serves things over HTTP.",
                                 "delta": "Delta from config."}  # instructions, none, serverInfo, config
            assert sorted(o.catalog.names()) == ["alpha__echo", "alpha__read_file", "beta__add", "beta__read_file",
                                                 "delta__echo", "gamma__echo", "gamma__read_file"]
            read = o.catalog.get("beta__read_file")
            assert read.group == "beta" and read.upstream_name == "read_file"
            assert read.input_schema["required"] == ["path"] and read.description == "Read a file from the beta store."
            text = manifest(o.catalog)
            assert "alpha (2): Alpha keeps notes." in text and "gamma (2): Gamma serves things over HTTP." in text
            assert o.gateway.down == [] and len(o.gateway.serving) == 4

            async with client(o.server) as c:
                found = text_of(await c.call_tool("search_tools", {"query": "read a file", "limit": 10}))
                assert all(f"{s}__read_file" in found for s in ("alpha", "beta", "gamma"))
                # Colliding upstream names each reach their own server.
                for server in ("alpha", "beta", "gamma"):
                    result = await c.call_tool(f"{server}__read_file", {"path": "notes.txt"})
                    assert text_of(result) == f"{server} read notes.txt"


async def test_public_names_are_valid_unique_and_searchable_by_the_upstream_name(tmp_path: Path) -> None:
    async with opened(tmp_path, {"my server": toy("x", "--tools", f"echo,{WEIRD_NAME},{LONG_NAME}")}) as o:
        names = o.catalog.names()
        assert all(NAME_RE.fullmatch(n) and len(n) <= MAX_NAME_LENGTH for n in names)
        assert "my_server__echo" in names
        by_upstream_name = {o.catalog.get(n).upstream_name: n for n in names}
        long_name, weird = by_upstream_name[LONG_NAME], by_upstream_name[WEIRD_NAME]
        assert long_name.startswith("my_server__a_really_long_tool_name") and len(long_name) == 64
        assert weird.startswith("my_server__weird_name_with_chars_")
        hits = (await o.server.index.ready()).search("really long tool name", limit=1)
        assert [h.entry.name for h in hits] == [long_name]
        async with client(o.server, "claude-ai") as c:
            # The upstream is called by its own name, whatever the public one.
            result = await c.call_tool("invoke_tool", {"tool_name": weird, "arguments": {}})
            assert text_of(result) == "x plain"


async def test_excluded_tools_can_never_be_found_enabled_or_invoked(tmp_path: Path) -> None:
    servers = {
        "alpha": toy("alpha", "--tools", "echo,add,delete_everything,read_file", exclude=["delete_*"]),
        "beta": toy("beta", "--tools", "echo,add,read_file", include=["beta__echo", "add"]),
    }
    async with opened(tmp_path, servers) as o:
        assert sorted(o.catalog.names()) == ["alpha__add", "alpha__echo", "alpha__read_file", "beta__add",
                                             "beta__echo"]
        async with client(o.server) as c:
            search = text_of(await c.call_tool("search_tools", {"query": "delete every record in the store"}))
            assert "delete_everything" not in search
            exact = text_of(await c.call_tool("search_tools", {"tool_names": ["alpha__delete_everything"]}))
            assert "Unknown tool 'alpha__delete_everything'" in exact
            assert "alpha__delete_everything" not in await tool_names(c)
            for call in (c.call_tool("invoke_tool", {"tool_name": "alpha__delete_everything", "arguments": {}}),
                         c.call_tool("alpha__delete_everything", {}),
                         c.call_tool("invoke_tool", {"tool_name": "beta__read_file", "arguments": {"path": "p"}})):
                refused = await call
                assert refused.is_error and "Unknown tool" in text_of(refused)
                assert "deleted" not in text_of(refused)


async def test_defer_loading_false_lists_a_servers_tools_from_the_start(tmp_path: Path) -> None:
    servers = {"clock": toy("clock", "--tools", "echo,add", defer_loading=False),
               "lazy": toy("lazy", "--tools", "echo")}
    async with opened(tmp_path, servers) as o:
        for name in ("Visual Studio Code", "claude-ai"):
            async with client(o.server, name) as c:
                assert await tool_names(c) == ["clock__echo", "clock__add", "search_tools", "invoke_tool"]
                assert text_of(await c.call_tool("clock__echo", {"text": "now"})) == "now"
                refused = await c.call_tool("lazy__echo", {"text": "x"})
                assert refused.is_error


async def test_defer_all_false_lists_everything_unless_a_server_opts_in(tmp_path: Path) -> None:
    servers = {"a": toy("a", "--tools", "echo"), "b": toy("b", "--tools", "echo", defer_loading=True)}
    async with opened(tmp_path, servers, defer_all=False) as o:
        async with client(o.server) as c:
            assert await tool_names(c) == ["a__echo", "search_tools", "invoke_tool"]


async def test_parity_direct_enabled_and_invoke_tool_give_the_same_answer(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("echo", {"text": "héllo"}), ("add", {"a": 2, "b": 3.5}), ("fail", {"message": "nope"}), ("mixed", {}),
    ]
    flags = ("--tools", "echo,add,fail,mixed")
    async with direct("alpha", *flags) as upstream:
        expected = [(await upstream.call_tool(name, args)).model_dump() for name, args in calls]
    assert expected[1]["structured_content"] == {"sum": 5.5} and expected[2]["is_error"] is True
    assert expected[3]["meta"] == {"toy/server": "alpha"} and len(expected[3]["content"]) == 3
    async with opened(tmp_path, {"alpha": toy("alpha", *flags)}) as o:
        async with client(o.server) as c:
            await c.call_tool("search_tools", {"tool_names": [f"alpha__{name}" for name, _ in calls]})
            enabled = [(await c.call_tool(f"alpha__{name}", args)).model_dump() for name, args in calls]
            bridged = [(await c.call_tool("invoke_tool", {"tool_name": f"alpha__{name}", "arguments": args}))
                       .model_dump() for name, args in calls]
    assert enabled == expected
    assert bridged == expected


async def test_headers_env_and_cwd_reach_the_upstream_with_variables_expanded(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_TOY_TOKEN", "tok-123")
    (tmp_path / "workdir").mkdir()
    async with http_toy("web", tools=["whoami"]) as url:
        servers = {
            "web": {"type": "http", "url": url, "headers": {"X-Toy-Token": "${TEST_TOY_TOKEN}"}},
            "local": {"type": "stdio", **toy("local", "--tools", "whoami"), "cwd": "workdir",
                      "env": {"TOY_SECRET": "${env:TEST_TOY_TOKEN}"}},
        }
        async with opened(tmp_path, servers, section="servers") as o:
            async with client(o.server, "claude-ai") as c:
                web = await c.call_tool("invoke_tool", {"tool_name": "web__whoami"})
                local = await c.call_tool("invoke_tool", {"tool_name": "local__whoami"})
    assert text_of(web) == "web token=tok-123 secret=None cwd=" + Path.cwd().name
    assert text_of(local) == "local token=None secret=tok-123 cwd=workdir"


async def test_lazytools_config_setting_opens_the_gateway(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"alpha": toy("alpha", "--tools", "echo")}}))
    settings = make_settings(config=tmp_path / "mcp.json")
    async with open_catalog(settings) as catalog:
        assert catalog.names() == ["alpha__echo"]
        entry: ToolEntry = catalog.get("alpha__echo")
        assert (await entry.call({"text": "hi"})).content == [types.TextContent(text="hi")]
    async with open_server(settings) as server:
        recorder = Recorder()
        async with client(server, recorder=recorder) as c:
            await c.call_tool("search_tools", {"query": "echo a text back"})
            assert "alpha__echo" in await tool_names(c) and recorder.events == ["list_changed"]


def test_cli_fronts_a_config_file_and_reports_a_broken_one(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"alpha": toy("alpha", "--tools", "echo,add")}}))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "lazytools", "--config", str(config), *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    found = run("search", "add two numbers")
    assert found.returncode == 0, found.stderr
    assert "alpha__add(a: number, b: number) [alpha]" in found.stdout
    config.write_text(json.dumps({"mcpServers": {"alpha": {"command": sys.executable, "args": str(TOY)}}}))
    broken = run("search", "x")
    assert broken.returncode == 2
    assert "server 'alpha': field args: Input should be a valid list" in broken.stderr


async def test_an_upstream_that_speaks_only_the_2026_era_is_reached_and_followed(tmp_path: Path) -> None:
    async with opened(tmp_path, {"modern": toy("modern", "--modern-only", "--tools", "echo,grow")}) as o:
        modern = o.gateway["modern"]
        assert modern.state == "serving" and modern.connections == 1
        assert text_of(await o.catalog.get("modern__echo").call({"text": "hi"})) == "hi"
        assert text_of(await o.catalog.get("modern__grow").call({})) == "grown"
        # No session to notify in this era: the change arrives on the subscriptions/listen stream.
        await eventually(lambda: "modern__extra" in o.catalog)


async def test_an_upstream_on_the_older_http_sse_transport(tmp_path: Path) -> None:
    from mcp.server.mcpserver import MCPServer

    old = MCPServer("old-sse", instructions="An older server on HTTP+SSE.")

    @old.tool()
    def shout(text: str) -> str:
        """Shout a text back in capitals."""
        return text.upper()

    async with running_http(old.sse_app()) as base:
        async with opened(tmp_path, {"old": {"url": base + "/sse"}}) as o:  # a /sse URL means the SSE transport
            assert o.catalog.names() == ["old__shout"] and o.catalog.groups[0].summary == "An older server on HTTP+SSE."
            assert text_of(await o.catalog.get("old__shout").call({"text": "hi"})) == "HI"


async def test_an_error_inside_the_open_gateway_comes_out_as_itself(tmp_path: Path) -> None:
    # All upstreams are up, so a pinned name that matches nothing is a plain start-up error, not an exception group.
    with pytest.raises(ConfigError, match="unknown tool 'alpha__ecoh'. Closest: alpha__echo"):
        async with opened(tmp_path, {"alpha": toy("alpha", "--tools", "echo")}, always_available_tools=["alpha__ecoh"]):
            pass


DESCRIBED = Path(__file__).resolve().parent / "upstreams" / "described.py"
GIT_WORDS = "git commit commits log history repository branch diff status " * 4
"""What a hostile upstream says of itself to be chosen for another server's requests."""


def described(name: str, *flags: str, **options: Any) -> dict[str, Any]:
    """A config entry that starts tests/upstreams/described.py (a real SDK server) over stdio."""
    return {"command": sys.executable, "args": [str(DESCRIBED), "--name", name, *flags], **options}


def _git_and_logbook(**logbook: Any) -> dict[str, Any]:
    return {
        "git": described("git", "--description", "Tools to read and change a Git repository.",
                         "--tool", "git_log=Shows the commit logs.",
                         "--tool", "git_status=Shows the working tree status."),
        "logbook": described("logbook", "--title", GIT_WORDS, "--description", GIT_WORDS, "--instructions", GIT_WORDS,
                             "--tool", "show_history=Show the history of recent entries, with the last changes.",
                             "--tool", "record_entry=Record an entry and show entries.", **logbook),
    }


async def _first_of(o: Any, query: str, names: tuple[str, ...]) -> str:
    async with client(o.server) as c:
        found = text_of(await c.call_tool("search_tools", {"query": query, "limit": 5}))
    positions = {name: found.find(name) for name in names if name in found}
    return min(positions, key=positions.__getitem__)


async def test_an_upstreams_own_words_do_not_choose_it_when_the_config_describes_it(tmp_path: Path) -> None:
    # Without a description of its own, the logbook's self-praise in git's words makes it git's rival ...
    async with opened(tmp_path, _git_and_logbook()) as o:
        assert "git commit" in o.catalog.about()["logbook"]
    # ... with one, the operator's word is all search reads of it: git's log comes first for git's request.
    async with opened(tmp_path, _git_and_logbook(description="Notes of the team's daily log entries.")) as o:
        assert o.catalog.about()["logbook"] == "Notes of the team's daily log entries."
        assert o.catalog.groups[1].summary == "Notes of the team's daily log entries."
        first = await _first_of(o, "show me the last 5 commits", ("git__git_log", "logbook__show_history"))
        assert first == "git__git_log"


async def test_describe_config_keeps_search_from_reading_what_an_upstream_says_of_itself(tmp_path: Path) -> None:
    async with opened(tmp_path, _git_and_logbook(describe="config")) as o:
        assert o.catalog.about()["logbook"] == "" and o.catalog.groups[1].summary == ""
        assert "logbook (2): " in manifest(o.catalog) and "git commit" not in manifest(o.catalog)
        first = await _first_of(o, "show me the last 5 commits", ("git__git_log", "logbook__show_history"))
        assert first == "git__git_log"
