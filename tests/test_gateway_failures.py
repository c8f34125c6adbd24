"""The gateway when upstreams misbehave: crash mid-session, hang, fail to start, go away, change their tools."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskStatus

from lazytools import build_server
from lazytools.app import configure_logging
from lazytools.sources.gateway.gateway import Backoff

from .conftest import Recorder, client, text_of
from .helpers import eventually, tool_names
from .upstreams.helpers import http_toy, opened, toy

pytestmark = pytest.mark.process  # every test here starts lazytools or an upstream as a child process


async def test_an_upstream_that_crashes_mid_session_is_named_and_comes_back_on_next_use(tmp_path: Path) -> None:
    servers = {"alpha": toy("alpha", "--tools", "echo,crash"), "beta": toy("beta", "--tools", "echo")}
    async with opened(tmp_path, servers) as o:
        async with client(o.server) as c:
            await c.call_tool("search_tools", {"tool_names": ["alpha__echo", "alpha__crash", "beta__echo"]})
            crashed = await c.call_tool("alpha__crash", {})
            assert crashed.is_error
            assert text_of(crashed).startswith("Upstream server 'alpha': the connection closed during 'crash'")
            assert text_of(await c.call_tool("beta__echo", {"text": "unaffected"})) == "unaffected"
            # The next call to alpha waits for the reconnection it triggers, then goes through.
            again = await c.call_tool("alpha__echo", {"text": "back"})
            assert not again.is_error and text_of(again) == "back"
            assert o.gateway["alpha"].connections == 2 and o.gateway["alpha"].state == "serving"
            assert {"alpha__echo", "alpha__crash", "beta__echo"} <= set(await tool_names(c))  # still enabled


async def test_an_upstream_killed_between_calls_is_noticed_and_reconnected_without_a_call(tmp_path: Path) -> None:
    async with opened(tmp_path, {"alpha": toy("alpha", "--tools", "echo,pid")}) as o:
        alpha = o.gateway["alpha"]
        pid = int(text_of(await o.catalog.get("alpha__pid").call({})))
        os.kill(pid, signal.SIGKILL)
        # Nothing is in flight: the end of the process's stdout alone starts the reconnection.
        await eventually(lambda: alpha.connections == 2 and alpha.state == "serving")
        assert int(text_of(await o.catalog.get("alpha__pid").call({}))) != pid


async def test_a_listing_warning_is_logged_once_not_at_every_reconnection(tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    servers = {"alpha": toy("alpha", "--tools", "echo,pid", include=["echo", "pid", "ech0"])}
    with caplog.at_level(logging.WARNING):
        async with opened(tmp_path, servers) as o:
            alpha = o.gateway["alpha"]
            for connections in (2, 3):
                os.kill(int(text_of(await o.catalog.get("alpha__pid").call({}))), signal.SIGKILL)
                await eventually(lambda: alpha.connections == connections and alpha.state == "serving")
    assert caplog.text.count("upstream 'alpha': reconnected") == 2
    assert caplog.text.count("upstream 'alpha': include 'ech0' matches none of its tools") == 1


async def test_a_call_retries_at_once_a_server_waiting_out_its_backoff(tmp_path: Path) -> None:
    servers = {"alpha": toy("alpha", "--tools", "echo,pid")}
    async with opened(tmp_path, servers, backoff=Backoff(first=600, most=600), connect_timeout=15) as o:
        alpha = o.gateway["alpha"]
        os.kill(int(text_of(await o.catalog.get("alpha__pid").call({}))), signal.SIGKILL)
        await eventually(lambda: alpha.state == "failed")  # it dropped soon after starting: next try in 10 minutes...
        result = await o.catalog.get("alpha__echo").call({"text": "now"})  # ...unless a call asks for it
        assert text_of(result) == "now" and alpha.connections == 2


async def test_a_server_that_keeps_dying_soon_after_start_backs_off_instead_of_respawning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        async with opened(tmp_path, {"flaky": toy("flaky", "--exit-after-list")},
                          backoff=Backoff(first=600, most=600)) as o:
            await eventually(lambda: "upstream 'flaky' disconnected" in caplog.text)
            assert "upstream 'flaky' disconnected: the connection closed (the server exited or crashed); " \
                   "retrying in 600 s" in caplog.text
            assert o.gateway["flaky"].connections == 1


async def test_a_hung_tool_times_out_with_the_server_named_and_everything_else_keeps_working(tmp_path: Path) -> None:
    servers = {"alpha": toy("alpha", "--tools", "echo,hang", timeout=2), "beta": toy("beta", "--tools", "echo")}
    async with opened(tmp_path, servers, call_timeout=60) as o:
        async with client(o.server, "claude-ai") as c:
            outcome: dict[str, str] = {}

            async def hang() -> None:
                result = await c.call_tool("invoke_tool", {"tool_name": "alpha__hang"})
                assert result.is_error
                outcome["hang"] = text_of(result)

            async with anyio.create_task_group() as tg:
                tg.start_soon(hang)
                for server in ("beta", "alpha"):  # another server, and the same one, answer meanwhile
                    result = await c.call_tool("invoke_tool", {"tool_name": f"{server}__echo",
                                                               "arguments": {"text": server}})
                    assert text_of(result) == server and "hang" not in outcome
            assert outcome["hang"] == ("Upstream server 'alpha': 'hang' did not answer within 2 s "
                                       "(the call was cancelled)")
            assert text_of(await c.call_tool("invoke_tool", {"tool_name": "alpha__echo",
                                                             "arguments": {"text": "after"}})) == "after"


async def test_upstreams_that_fail_to_start_are_reported_skipped_and_arrive_when_they_recover(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    flag = tmp_path / "ready"
    servers = {
        "good": toy("good", "--tools", "echo"),
        "missing": {"command": str(tmp_path / "no-such-server")},
        "late": toy("late", "--tools", "echo,add", "--require-file", str(flag)),
    }
    with caplog.at_level(logging.INFO):
        async with opened(tmp_path, servers, always_available_tools=["late__echo"]) as o:
            assert "upstream 'missing' failed to start: command not found" in caplog.text
            assert "upstream 'late' failed to start: it exited or closed the connection before answering" in caplog.text
            assert "not serving yet: missing" in caplog.text
            # Pinning a tool of a server that is not up yet warns instead of refusing to start.
            assert "ALWAYS_AVAILABLE_TOOLS names 'late__echo', which no server serves yet" in caplog.text
            assert o.catalog.names() == ["good__echo"]
            recorder = Recorder()
            async with client(o.server, recorder=recorder) as c:
                assert await tool_names(c) == ["search_tools", "invoke_tool"]
                assert text_of(await c.call_tool("invoke_tool", {"tool_name": "good__echo",
                                                                 "arguments": {"text": "ok"}})) == "ok"
                flag.touch()
                await eventually(lambda: "late__add" in o.catalog)
                await eventually(lambda: recorder.events == ["list_changed"])
                assert await tool_names(c) == ["late__echo", "search_tools", "invoke_tool"]  # pinned now that it exists
                assert text_of(await c.call_tool("late__echo", {"text": "here"})) == "here"
            assert o.gateway["missing"].state == "failed" and o.gateway["late"].state == "serving"


async def test_a_server_not_serving_is_named_where_its_tools_are_missed(tmp_path: Path) -> None:
    """A configured server that has not started has no tools to find: a search that finds nothing, its group, and a
    call of one of its tools by name say which server is not serving and why, until it serves."""
    flag = tmp_path / "ready"
    servers = {"good": toy("good", "--tools", "echo"), "late": toy("late", "--tools", "echo,add", "--require-file",
                                                                   str(flag)),
               "gone": {"command": str(tmp_path / "no-such-server")}}
    async with opened(tmp_path, servers) as o, client(o.server) as c:
        why = "late (it exited or closed the connection before answering)"
        group = text_of(await c.call_tool("search_tools", {"group": "late"}))
        # Not what the server printed on stderr ("toy late: ... is missing"): that is for the operator's log.
        assert f"Not serving now: {why}." in group and "is missing" not in group
        assert "gone" not in group  # a search of one group tells that group's state alone
        nothing = text_of(await c.call_tool("search_tools", {"query": "zqxv wjkp"}))
        assert why in nothing and "gone (command not found" in nothing
        assert "Not serving" not in text_of(await c.call_tool("search_tools", {"query": "echo a text"}))
        called = await c.call_tool("invoke_tool", {"tool_name": "late__add", "arguments": {}})
        assert called.is_error and "Its server, late, is not serving now (it exited" in text_of(called)
        other = await c.call_tool("invoke_tool", {"tool_name": "elsewhere__add", "arguments": {}})
        assert other.is_error and "not serving" not in text_of(other)
        flag.touch()
        await eventually(lambda: "late__add" in o.catalog)
        group = text_of(await c.call_tool("search_tools", {"group": "late"}))
        assert "late__add" in group and "Not serving" not in group
        assert list(o.catalog.not_serving()) == ["gone"]


async def test_an_upstream_that_never_answers_initialize_is_skipped(tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    servers = {"good": toy("good", "--tools", "echo"), "stuck": toy("stuck", "--hang-on-start")}
    with caplog.at_level(logging.WARNING):
        # The timeout is the test's own and generous: at a load of 16 a Python upstream took over 4 s to start, so
        # with 4 s "good" failed every attempt too. 30 s is long for a start, short against `eventually`'s 120 s.
        async with opened(tmp_path, servers, connect_timeout=30) as o:
            await eventually(lambda: o.gateway["good"].state == "serving" and o.catalog.names() == ["good__echo"])
            assert o.gateway["stuck"].state != "serving"
            await eventually(lambda: "upstream 'stuck' failed to start: did not start and answer initialize and "
                                     "tools/list within 30 s" in caplog.text)
            assert text_of(await o.catalog.get("good__echo").call({"text": "fine"})) == "fine"


async def test_an_http_upstream_that_goes_away_gives_clear_errors_and_the_others_serve(tmp_path: Path) -> None:
    stop, stopped = anyio.Event(), anyio.Event()

    async def serve_web(*, task_status: TaskStatus[str]) -> None:
        async with http_toy("web", tools=["echo"]) as url:
            task_status.started(url)
            await stop.wait()
        stopped.set()

    async with anyio.create_task_group() as tg:
        url = await tg.start(serve_web)
        async with opened(tmp_path, {"web": {"url": url}, "alpha": toy("alpha", "--tools", "echo")}) as o:
            async with client(o.server, "claude-ai") as c:
                call = {"tool_name": "web__echo", "arguments": {"text": "up"}}
                assert text_of(await c.call_tool("invoke_tool", call)) == "up"
                stop.set()
                await stopped.wait()
                gone = await c.call_tool("invoke_tool", call)
                assert gone.is_error and text_of(gone).startswith("Upstream server 'web': ")
                down = await c.call_tool("invoke_tool", call)
                assert down.is_error and text_of(down).startswith("Upstream server 'web': not connected (")
                assert "keeps retrying" in text_of(down)
                # Its tools stay listed while it is down: a search that shows one says so.
                found = text_of(await c.call_tool("search_tools", {"query": "echo the text"}))
                assert "web__echo" in found and "Not serving now: web (" in found
                assert "Its tools below fail until it is back" in found and "alpha (" not in found
                assert text_of(await c.call_tool("invoke_tool", {"tool_name": "alpha__echo",
                                                                 "arguments": {"text": "alive"}})) == "alive"


async def test_tool_list_changes_relist_reindex_keep_enabled_tools_and_notify(tmp_path: Path) -> None:
    async with opened(tmp_path, {"alpha": toy("alpha", "--tools", "echo,grow,shrink")}) as o:
        server = o.server
        recorder, proxy_recorder = Recorder(), Recorder()
        async with client(server, recorder=recorder) as c, client(server, "claude-ai", recorder=proxy_recorder) as p:
            await p.list_tools()
            await c.call_tool("search_tools", {"tool_names": ["alpha__echo", "alpha__grow", "alpha__shrink"]})
            assert recorder.events == ["list_changed"]
            assert text_of(await c.call_tool("alpha__grow", {})) == "grown"
            await eventually(lambda: "alpha__extra" in o.catalog)
            await eventually(lambda: recorder.events == ["list_changed"] * 2)
            await eventually(lambda: proxy_recorder.events == ["list_changed"])  # its search_tools text changed
            assert await tool_names(c) == ["search_tools", "invoke_tool", "alpha__echo", "alpha__grow", "alpha__shrink"]
            found = text_of(await c.call_tool("search_tools", {"query": "increment an integer"}))
            assert found.startswith("Enabled: alpha__extra.")
            assert text_of(await c.call_tool("alpha__extra", {"x": 41})) == "42"

            assert text_of(await c.call_tool("alpha__shrink", {"tool": "echo"})) == "shrunk"
            await eventually(lambda: "alpha__echo" not in o.catalog)
            await eventually(lambda: len(recorder.events) == 4)
            assert await tool_names(c) == ["search_tools", "invoke_tool", "alpha__grow", "alpha__shrink", "alpha__extra"]
            gone = await c.call_tool("alpha__echo", {"text": "x"})
            assert gone.is_error and "Unknown tool 'alpha__echo'" in text_of(gone)
            assert "alpha__echo" not in text_of(await c.call_tool("search_tools", {"query": "echo a text back"}))
        indexed = [entry.name for entry in (await build_server(o.catalog, o.settings).index.ready()).entries]
        assert "alpha__extra" in indexed and "alpha__echo" not in indexed


async def test_a_config_that_starts_lazytools_on_itself_does_not_recurse(tmp_path: Path,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="lazytools.upstream")  # upstream stderr lines, labelled by server
    me = {"command": sys.executable, "args": ["-m", "lazytools", "--config", str(tmp_path / "mcp.json")],
          "cwd": str(tmp_path)}
    servers = {"me": me, "alpha": toy("alpha", "--tools", "echo")}
    async with opened(tmp_path, servers, backoff=Backoff(first=600, most=600)) as o:
        await eventually(lambda: o.gateway["me"].state == "failed")
        assert o.catalog.names() == ["alpha__echo"]
        await eventually(lambda: "[me] " in caplog.text and "which would front this file again" in caplog.text)


async def test_an_upstreams_stderr_is_logged_escaped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Terminal codes, bidi marks and carriage returns a server prints reach the log as visible escapes."""
    caplog.set_level(logging.INFO, logger="lazytools.upstream")
    script = "import sys; sys.stderr.write('\\x1b[2Jwiped\\u202ereversed\\rback\\x07\\n'); sys.exit(1)"
    async with opened(tmp_path, {"loud": {"command": sys.executable, "args": ["-c", script]}},
                      backoff=Backoff(first=600, most=600)) as o:
        await eventually(lambda: o.gateway["loud"].state == "failed" and "[loud] " in caplog.text)
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("[loud] "))
    assert "wiped" in line and "reversed" in line
    assert not any(char in line for char in "\x1b\u202e\r\x07"), repr(line)


SECRETS = ("pa55word", "SEKRIT-KEY", "SEKRIT-HEADER")


async def test_credentials_in_an_upstream_url_or_header_stay_out_of_the_logs(tmp_path: Path,
                                                                              caplog: pytest.LogCaptureFixture) -> None:
    # The default level first: the HTTP client's per-request lines are off. Then DEBUG: they are on, redacted.
    client_log = logging.getLogger("httpx2")
    before = client_log.level
    try:
        for level in ("INFO", "DEBUG"):
            caplog.clear()
            configure_logging(level)
            caplog.set_level(level)
            async with http_toy("web", tools=["echo"]) as url:
                keyed = url.replace("http://", "http://alice:pa55word@") + "?api_key=SEKRIT-KEY&v=2"
                servers = {"web": {"url": keyed},
                           "bad": {"url": url, "headers": {"X-Api-Key": "tok\nen SEKRIT-HEADER"}}}
                async with opened(tmp_path, servers) as o:
                    async with client(o.server, "claude-ai") as c:
                        for _ in range(3):
                            call = {"tool_name": "web__echo", "arguments": {"text": "hi"}}
                            assert text_of(await c.call_tool("invoke_tool", call)) == "hi"
                        refused = await c.call_tool("invoke_tool", {"tool_name": "bad__echo", "arguments": {}})
                    await eventually(lambda: sum("upstream 'bad'" in r.getMessage() for r in caplog.records) >= 2)
            lines = [record.getMessage() for record in caplog.records]
            assert not [line for line in lines if any(secret in line for secret in SECRETS)], level
            assert all(secret not in text_of(refused) for secret in SECRETS)
            assert any("upstream 'bad'" in line and "header value ***" in line for line in lines), lines
            requests = [line for line in lines if line.startswith("HTTP Request: POST")]
            if level == "INFO":
                assert requests == []
            else:
                assert requests and all("//***@127.0.0.1:" in line and "?api_key=***&v=***" in line
                                        for line in requests), requests
    finally:
        client_log.setLevel(before)


def test_a_command_not_on_path_is_named() -> None:
    from lazytools.sources.gateway.connect import describe_failure

    lost = FileNotFoundError(2, "No such file or directory")  # as a spawn may raise it: no file name attached
    assert describe_failure(lost, command="uvx") == "command not found: `uvx` not found on PATH"
    named = FileNotFoundError(2, "No such file or directory", "/opt/bin/server")
    assert describe_failure(named, command="/opt/bin/server") == "command not found: `/opt/bin/server` not found"
    # A relative path is looked up from the directory the client started lazytools in (often / or the home
    # folder, not the config's): without it named, "`./server.py` not found" beside the file read as a mystery.
    relative = FileNotFoundError(2, "No such file or directory", "./server.py")
    assert describe_failure(relative, command="./server.py") == \
        f"command not found: `./server.py` not found in {Path.cwd()} (the working directory; set \"cwd\")"
    assert describe_failure(relative, command="./server.py", cwd=Path("/srv/tools")) == \
        "command not found: `./server.py` not found in /srv/tools (the server's cwd)"


async def test_a_result_of_many_small_parts_reaches_the_client_joined_with_nothing_of_its_text_lost(
        tmp_path: Path) -> None:
    import mcp_types as types

    from lazytools.parts import MAX_RESULT_PARTS

    manyparts = {"command": sys.executable, "args": [str(Path(__file__).parent / "upstreams" / "manyparts.py")]}
    async with opened(tmp_path, {"many": manyparts}) as o, client(o.server, "claude-ai") as c:
        lines = await c.call_tool("invoke_tool", {"tool_name": "many__lines", "arguments": {"count": 5_000}})
        pixels = await c.call_tool("invoke_tool", {"tool_name": "many__pixels", "arguments": {"count": 1_500}})
    assert not lines.is_error and len(lines.content) == 4  # a line, the image, the other lines, the note
    first, image, rest, note = lines.content
    assert isinstance(image, types.ImageContent)
    assert isinstance(first, types.TextContent) and first.text == "line 0"
    assert isinstance(rest, types.TextContent) and rest.text.split("\n") == [f"line {n}" for n in range(1, 5_000)]
    assert isinstance(note, types.TextContent) and "5,001 parts were more than 1,000" in note.text
    assert len(pixels.content) == MAX_RESULT_PARTS and isinstance(pixels.content[-2], types.ImageContent)
    assert "the 501 parts after the first 999 were dropped" in text_of(pixels)


def test_parts_within_the_bound_are_left_as_they_are() -> None:
    from lazytools.parts import fewer_parts

    blocks = ["a", "b", 3, "c", "d"]
    plain = lambda block: block if isinstance(block, str) else None  # noqa: E731
    assert fewer_parts(blocks, plain, str, limit=5) is None
    assert fewer_parts(blocks, plain, str, limit=4) == ["a\nb", 3, "c\nd", "[lazytools: the result's 5 parts were "
                                                        "more than 4: its text parts are joined]"]
