"""Hostile input to lazytools' core (issue #12): schemas that refer outside themselves or are broken, results that
cannot be serialised or are huge, arguments that make validation slow, names that forge log lines.

Upstream cases run `tests/upstreams/hostile.py`, a real stdio server that writes JSON-RPC by hand.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import SessionMessage

import lazytools
from lazytools import Catalog, ConfigError, FunctionGroup, Group, ToolArgumentsError, build_server, validation
from lazytools.sources.gateway.config import load_config, parse_config
from lazytools.sources.gateway.configtext import MAX_DEFAULT_DEPTH, expand_variables
from lazytools.sources.gateway.stdio import MAX_CONTAINERS, InFlight, LineReader, parse_line
from lazytools.transports.http import build_app
from lazytools.validation import Limits, validate_arguments

from .conftest import client, make_settings, text_of
from .helpers import eventually, running_http
from .upstreams import hostile_http, hostile_sse
from .upstreams.helpers import opened

HOSTILE = Path(__file__).resolve().parent / "upstreams" / "hostile.py"
SOURCE = str(Path(lazytools.__file__).resolve().parent.parent)
"""Where the lazytools under test lives: the spawned server runs the same code."""


def hostile(*flags: str, timeout: float = 20) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(HOSTILE), *flags], "timeout": timeout}


@contextmanager
def listener() -> Iterator[tuple[str, list[bytes]]]:
    """A real HTTP listener on 127.0.0.1 that records every request it gets (and answers 404)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.2)
    seen: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    seen.append(conn.recv(4096))
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/schema.json", seen
    finally:
        stop.set()
        thread.join(5)
        sock.close()


async def ping(c: Client) -> None:
    """A ping (the SDK marks it deprecated for 2026-07-28; these sessions are handshake-era)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await c.send_ping()


async def call(c: Client, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return await c.call_tool("invoke_tool", {"tool_name": tool, "arguments": arguments})


# -- item 2: $ref is never fetched ------------------------------------------------------------------------------------


@pytest.mark.process
async def test_references_outside_the_schema_are_never_fetched(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    local = tmp_path / "integer.json"
    local.write_text('{"type": "integer"}')
    with listener() as (url, seen):
        async with opened(tmp_path, {"h": hostile("--ref-url", url, "--ref-file", local.as_uri())}) as o:
            async with client(o.server, "claude-ai") as c:
                for _ in range(2):
                    for tool in ("h__ref_url", "h__ref_file"):
                        # Were the file read, "abc" would fail its {"type": "integer"}.
                        result = await call(c, tool, {"text": "abc", "n": 1})
                        assert not result.is_error, text_of(result)
                        assert text_of(result) == f"{tool[3:]} got " + '{"n": 1, "text": "abc"}'
                        # The rest of the schema is still checked.
                        wrong = await call(c, tool, {"text": "abc", "n": "x"})
                        assert wrong.is_error and "n: 'x' is not of type 'integer'" in text_of(wrong)
        assert seen == []
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING and "not inside" in r.getMessage()]
    assert len(warnings) == 2, warnings  # once per tool
    assert any("h__ref_url" in w and url in w for w in warnings) and any("h__ref_file" in w for w in warnings)


# -- item 4: broken schemas and malformed tools ----------------------------------------------------------------------


@pytest.mark.process
async def test_a_broken_schema_checks_what_it_can_and_a_malformed_tool_is_skipped(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with opened(tmp_path, {"h": hostile()}) as o:
        assert o.gateway["h"].state == "serving"
        assert "h__echo" in o.catalog and "h__broken" not in o.catalog
        async with client(o.server, "claude-ai") as c:
            for tool in ("h__bad_pattern", "h__ref_loop"):
                fine = await call(c, tool, {"text": "(", "n": 1})
                assert not fine.is_error, text_of(fine)
                wrong = await call(c, tool, {"n": "x"})
                assert wrong.is_error and "n: 'x' is not of type 'integer'" in text_of(wrong), text_of(wrong)
                assert "Internal error" not in text_of(wrong)
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("skipping tool 'broken'" in m and "properties" in m for m in messages), messages
    assert sum("h__bad_pattern" in m for m in messages) == 1
    assert sum("h__ref_loop" in m and "recurses" in m for m in messages) == 1


# -- items 3 and 4: results that cannot be serialised -----------------------------------------------------------------


@pytest.mark.process
async def test_lone_surrogates_and_nan_from_an_upstream_do_not_break_stdio(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"h": hostile(timeout=10)}}))
    params = StdioServerParameters(command=sys.executable, args=["-m", "lazytools", "--config", str(config)],
                                   cwd=str(tmp_path), env={"LAZYTOOLS_MODE": "proxy", "PYTHONPATH": SOURCE})
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as c:
            for _ in range(2):
                odd = await call(c, "h__surrogate", {})
                assert not odd.is_error, text_of(odd)
                assert "before \ufffd after" in text_of(odd) and "1 lone surrogate" in text_of(odd)
                nan = await call(c, "h__nan", {})
                assert not nan.is_error, text_of(nan)
                assert nan.structured_content == {"a": None, "b": None}
            await ping(c)  # the server is still there
            assert text_of(await call(c, "h__echo", {"text": "still here"})).endswith('{"text": "still here"}')


def odd_catalog() -> Catalog:
    odd = FunctionGroup("odd", summary="Tools whose results are hard to send.")

    @odd.tool
    def lone_surrogate() -> dict[str, Any]:
        """A result with a lone surrogate, as json.loads makes from an escape."""
        value = json.loads('"\\ud800 and \\ud83d\\ude00"')
        return {"text": value, json.loads('"key\\udfff"'): 1}

    @odd.tool
    def not_a_number() -> dict[str, float]:
        """NaN and Infinity."""
        return {"nan": float("nan"), "inf": float("inf")}

    @odd.tool
    def enormous_integer() -> int:
        """An integer past Python's 4300-digit conversion limit."""
        return 10**5000

    @odd.tool
    def huge(size: int, char: str = "é") -> str:
        """`size` characters."""
        return char * size

    catalog = Catalog()
    catalog.set_group(Group("odd", odd.summary), odd.entries)
    return catalog


async def test_unserialisable_in_process_results_are_answered_over_http() -> None:
    server = build_server(odd_catalog(), make_settings(mode="proxy", max_result_bytes=65536))
    with anyio.fail_after(30):
        async with running_http(build_app(server, server.settings)) as base:
            async with Client(base + "/mcp", mode="legacy") as c:
                odd = await call(c, "lone_surrogate", {})
                assert not odd.is_error
                assert "\\ufffd and \U0001f600" not in text_of(odd)  # replaced, not escaped
                assert "\ufffd and \U0001f600" in text_of(odd) and "lone surrogate(s)" in text_of(odd)
                assert odd.structured_content == {"text": "\ufffd and \U0001f600", "key\ufffd": 1}
                nan = await call(c, "not_a_number", {})
                assert not nan.is_error and json.loads(text_of(nan)) == {"nan": None, "inf": None}
                big = await call(c, "enormous_integer", {})
                assert big.is_error and "cannot be written as JSON" in text_of(big), text_of(big)
                await ping(c)


# -- item 7 and 9: result size ---------------------------------------------------------------------------------------


def _size(result: types.CallToolResult) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


async def test_in_process_results_over_the_limit_are_truncated_with_a_note() -> None:
    server = build_server(odd_catalog(), make_settings(mode="proxy", max_result_bytes=65536))
    async with client(server) as c:
        result = await call(c, "huge", {"size": 200_000})
        assert not result.is_error and _size(result) <= 65536
        assert text_of(result).startswith("éééé")
        note = result.content[-1]
        assert isinstance(note, types.TextContent) and "truncated" in note.text and "400,0" in note.text
        small = await call(c, "huge", {"size": 10})
        assert text_of(small) == "é" * 10


async def test_a_truncated_result_keeps_all_the_text_that_fits() -> None:
    """Cut where the limit is, not far before it, whatever the characters cost in JSON: one byte, two or four of
    UTF-8, two or six of escape."""
    limit = 65536
    server = build_server(odd_catalog(), make_settings(mode="proxy", max_result_bytes=limit))
    async with client(server) as c:
        for char in ("a", "é", "\U0001f600", '"', "\x01"):
            result = await call(c, "huge", {"size": limit, "char": char})
            assert not result.is_error and limit - 512 < _size(result) <= limit, (char, _size(result))
            head = result.content[0]
            assert isinstance(head, types.TextContent) and head.text == char * len(head.text)
            assert "truncated" in text_of(result)


@pytest.mark.process
async def test_upstream_results_are_bounded_and_a_huge_one_is_not_read(tmp_path: Path) -> None:
    limit = 65536
    async with opened(tmp_path, {"h": hostile()}, max_result_bytes=limit) as o:
        async with client(o.server, "claude-ai") as c:
            cut = await call(c, "h__big", {"size": 100_000})
            assert not cut.is_error and _size(cut) <= limit and "truncated" in text_of(cut)
            # Past 2 x limit + 1 MiB the line is skipped as it arrives, and its request gets an error.
            huge = await call(c, "h__big", {"size": 3_000_000})
            assert huge.is_error and "it was not read" in text_of(huge), text_of(huge)
            assert "3,000,0" in text_of(huge)
            after = await call(c, "h__echo", {"text": "next"})
            assert not after.is_error and text_of(after).endswith('{"text": "next"}')
        assert o.gateway["h"].connections == 1


@pytest.mark.process
async def test_an_upstream_answer_of_too_many_arrays_is_not_parsed_and_fails_its_call(tmp_path: Path) -> None:
    """Parsing millions of small arrays held the event loop, every session's, for seconds: an answer holding more
    than the bound fails its call at once, with the count, and the connection serves on."""
    async with opened(tmp_path, {"h": hostile()}) as o:
        async with client(o.server, "claude-ai") as c:
            within = await call(c, "h__crowded", {"size": MAX_CONTAINERS - 10})
            assert not within.is_error and text_of(within) == "rows"
            crowded = await call(c, "h__crowded", {"size": 2_000_000})
            assert crowded.is_error and "holds 2,000,006 arrays and objects, more than lazytools reads (100,000)" \
                in text_of(crowded), text_of(crowded)
            after = await call(c, "h__echo", {"text": "next"})
            assert not after.is_error
        assert o.gateway["h"].connections == 1


@pytest.mark.process
async def test_structured_content_of_many_keys_or_numbers_is_served_whole(tmp_path: Path) -> None:
    """Wide structured content is no hostile shape: 100,000 keys or 500,000 numbers (under every bound) come back
    whole. docs/reliability.md ("Known limits") has what parsing them holds the event loop for."""
    async with opened(tmp_path, {"h": hostile()}) as o:
        async with client(o.server, "claude-ai") as c:
            keys = await call(c, "h__wide", {"size": 100_000})
            assert not keys.is_error and keys.structured_content is not None
            assert len(keys.structured_content["a"]) == 100_000 and keys.structured_content["a"]["k99999"] == 99_999
            numbers = await call(c, "h__wide", {"size": 500_000, "keys": False})
            assert not numbers.is_error and numbers.structured_content is not None
            assert numbers.structured_content["a"][-1] == 499_999 and len(numbers.structured_content["a"]) == 500_000


@pytest.mark.process
async def test_an_upstream_result_nested_past_the_sdks_depth_limit_is_the_upstreams_error(tmp_path: Path) -> None:
    """Structured content 400 arrays deep parses, but the SDK's client checks a result by serialising it and
    pydantic stops at its depth limit (a ValueError): the call said "Internal error in lazytools"; it is the
    upstream's result, and the error says so. 200 deep passes."""
    async with opened(tmp_path, {"h": hostile()}) as o:
        async with client(o.server, "claude-ai") as c:
            within = await call(c, "h__deep_result", {"size": 200})
            assert not within.is_error, text_of(within)
            deep = await call(c, "h__deep_result", {"size": 400})
            assert deep.is_error and "'deep_result' returned a result lazytools cannot read" in text_of(deep), \
                text_of(deep)
            assert "Internal error in lazytools" not in text_of(deep)
            assert not (await call(c, "h__echo", {"text": "next"})).is_error
        assert o.gateway["h"].connections == 1


@pytest.mark.process
@pytest.mark.parametrize(("tool", "size", "why"), [
    ("crowded_middle", 150_000, "holds 300,007 arrays and objects, more than lazytools reads (100,000)"),
    ("big_middle", 3_000_000, "bytes, more than lazytools reads (1,179,648; set by LAZYTOOLS_MAX_RESULT_BYTES)"),
])
async def test_an_answer_naming_its_request_neither_first_nor_last_fails_its_call_at_once(
        tmp_path: Path, tool: str, size: int, why: str) -> None:
    """An answer not read (too many arrays, or too long) whose id sits between its result and another member was
    dropped, and its call waited for its timeout: its id is now found among those of the requests in flight (in a
    line too long to hold, as it is skipped)."""
    async with opened(tmp_path, {"h": hostile(timeout=5)}, max_result_bytes=65536) as o:
        async with client(o.server, "claude-ai") as c:
            failed = await call(c, f"h__{tool}", {"size": size})
            assert failed.is_error and why in text_of(failed), text_of(failed)
            assert "did not answer within" not in text_of(failed)
            after = await call(c, "h__echo", {"text": "next"})
            assert not after.is_error
        assert o.gateway["h"].connections == 1


async def test_an_http_upstreams_answers_are_read_within_the_bounds_a_stdio_ones_are(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The SDK read an HTTP answer whole, however large, and parsed any number of arrays on the event loop: each is
    now read within 2 x LAZYTOOLS_MAX_RESULT_BYTES + 1 MiB and MAX_CONTAINERS, as JSON and as SSE events, and one
    past them fails its call at once; an answer compressed though lazytools asked for none is refused too."""
    async with hostile_http.serve() as url, opened(tmp_path, {"w": {"url": url}}, max_result_bytes=65536) as o:
        async with client(o.server, "claude-ai") as c:
            assert text_of(await call(c, "w__echo", {"size": 1})) == "echo 1"
            assert text_of(await call(c, "w__echo_sse", {"size": 2})) == "echo_sse 2"
            for name in ("big", "big_sse"):
                huge = await call(c, f"w__{name}", {"size": 3_000_000})
                assert huge.is_error and "more than lazytools reads" in text_of(huge), (name, text_of(huge))
                assert "it was not read" in text_of(huge)
            within = await call(c, "w__crowded", {"size": MAX_CONTAINERS - 10})  # read, then cut to the result bound
            assert not within.is_error and text_of(within).startswith("rows"), text_of(within)
            for name in ("crowded", "crowded_sse", "crowded_odd"):
                crowded = await call(c, f"w__{name}", {"size": 150_000})
                assert crowded.is_error and "holds 150,006 arrays and objects" in text_of(crowded), text_of(crowded)
            # Many blocks are joined before the SDK's client validates each, as a stdio upstream's are.
            with caplog.at_level(logging.WARNING):
                parts = await call(c, "w__parts", {"size": 5_000})
            assert not parts.is_error and len(parts.content) < 100 and "p4999" in text_of(parts)
            assert "with 5000 content parts: joined to 2" in caplog.text  # the text and a note saying so
            for name in ("gzip", "gzip_sse"):  # a megabyte of gzip can be a gigabyte of text
                packed = await call(c, f"w__{name}", {"size": 1})
                assert packed.is_error and "came compressed (gzip)" in text_of(packed), text_of(packed)
            assert text_of(await call(c, "w__echo_sse", {"size": 3})) == "echo_sse 3"
        assert o.gateway["w"].connections == 1


async def test_a_legacy_sse_upstreams_answer_past_the_bounds_fails_its_call_at_once(tmp_path: Path) -> None:
    """On the older HTTP+SSE transport every answer comes on the one GET stream, which answers no one request: an
    event past the bounds there was dropped, and its call waited for its timeout. It now fails at once, its request
    told by the event's own id (the SDK's server writes it first)."""
    async with hostile_sse.serve() as url, opened(tmp_path, {"old": {"type": "sse", "url": url, "timeout": 5}},
                                                   max_result_bytes=65536) as o:
        async with client(o.server, "claude-ai") as c:
            assert text_of(await call(c, "old__echo", {"size": 1})) == "echo 1"
            huge = await call(c, "old__big", {"size": 3_000_000})
            assert huge.is_error and "is an event of 6,000,1" in text_of(huge), text_of(huge)
            assert "more than lazytools reads (1,179,648); it was not read" in text_of(huge)
            crowded = await call(c, "old__crowded", {"size": 150_000})
            assert crowded.is_error and "holds 150,00" in text_of(crowded), text_of(crowded)
            for failed in (huge, crowded):
                assert "did not answer within" not in text_of(failed)
            assert text_of(await call(c, "old__echo", {"size": 2})) == "echo 2"
        assert o.gateway["old"].connections == 1


async def test_the_sse_answer_of_a_timed_out_call_is_closed(tmp_path: Path) -> None:
    """The SDK kept reading the SSE answer of a call that timed out for as long as the upstream kept it open: one
    that never ended them took a connection each, until the pool's 100 were gone and every call to it failed."""
    closed = hostile_http.HELD["closed"]
    async with hostile_http.serve() as url, opened(tmp_path, {"w": {"url": url, "timeout": 0.5}}) as o:
        async with client(o.server, "claude-ai") as c:
            for _ in range(3):
                late = await call(c, "w__never_ends_sse", {"size": 0})
                assert late.is_error and "did not answer within 0.5 s" in text_of(late)
            await eventually(lambda: hostile_http.HELD["closed"] == closed + 3)
            assert hostile_http.HELD["open"] == 0
            assert text_of(await call(c, "w__echo", {"size": 4})) == "echo 4"


@pytest.mark.process
async def test_an_upstream_error_message_is_cut(tmp_path: Path) -> None:
    """An upstream's JSON-RPC error of 2 MB reaches the model as a few thousand characters that say how long it was
    (its progress and log text are cut the same way), and the connection serves on."""
    async with opened(tmp_path, {"h": hostile()}) as o:
        async with client(o.server, "claude-ai") as c:
            failed = await call(c, "h__big_error", {"size": 2_000_000})
            assert failed.is_error and "error -32603" in text_of(failed)
            assert len(text_of(failed)) < 5_000 and "cut from 2000000 characters" in text_of(failed)
            after = await call(c, "h__echo", {"text": "next"})
            assert not after.is_error
            # -32000 is a server's own error code too (the SDK's "connection closed" is another thing): no reconnect.
            quota = await call(c, "h__server_error", {})
            assert quota.is_error and "failed with error -32000: quota exceeded" in text_of(quota), text_of(quota)
        assert o.gateway["h"].connections == 1


# -- item 6: validation off the event loop, bounded ------------------------------------------------------------------


@pytest.mark.process
async def test_a_slow_validation_does_not_hold_other_sessions(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    started = threading.Event()  # set in the worker thread when the attacker's check starts
    served = threading.Event()  # set once the other session was answered
    check = validation.validate_arguments

    def watched(tool: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if "slow_pattern" in tool:
            started.set()
            # The backtracking check runs again and again until the other session was served, however long that
            # takes on a busy machine: the order below cannot depend on how fast the other calls are.
            for _ in range(100):
                if served.is_set():
                    break
                with suppress(ToolArgumentsError):
                    check(tool, *args, **kwargs)
        return check(tool, *args, **kwargs)

    monkeypatch.setattr(validation, "validate_arguments", watched)
    # The check's own deadline is far off, so what stops the attacker's check is the pattern's timeout.
    async with opened(tmp_path, {"h": hostile()}, validation_timeout=600) as o:
        order: list[str] = []
        async with client(o.server, "claude-ai") as attacker, client(o.server, "claude-ai") as other:

            async def attack() -> None:
                result = await call(attacker, "h__slow_pattern", {"text": "a" * 40 + "!"})
                assert result.is_error and "it backtracks" in text_of(result), text_of(result)
                order.append("attack answered")

            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(attack)
                    await eventually(started.is_set)
                    await ping(other)
                    order.append("ping answered")
                    fine = await call(other, "h__echo", {"text": "meanwhile"})
                    assert not fine.is_error
                    order.append("echo answered")
                    served.set()
        assert order == ["ping answered", "echo answered", "attack answered"]


def test_unique_items_compares_as_json_schema_does() -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array", "uniqueItems": True}}}
    distinct = [{"k": i, "v": [i, {"x": str(i)}]} for i in range(8000)]
    # The comparison is tested, not the budget: 8,000 items take ~0.2 s of CPU, and the default 5 s ran out when the
    # test ran niced at a load average of 8 on 2 cores.
    limits = Limits(timeout=300, max_bytes=Limits.defaults().max_bytes)
    assert validate_arguments("t", schema, {"items": distinct}, limits)["items"] is distinct
    with pytest.raises(ToolArgumentsError, match="item 8000 repeats an earlier one"):
        validate_arguments("t", schema, {"items": [*distinct, {"v": [3, {"x": "3"}], "k": 3}]}, limits)
    with pytest.raises(ToolArgumentsError, match="item 1 repeats"):
        validate_arguments("t", schema, {"items": [1, 1.0]}, limits)
    assert validate_arguments("t", schema, {"items": [1, True, "1", [1], {"a": 1}, 0, False, None]}, limits)


def test_arguments_over_the_size_limit_are_refused_before_checking() -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array"}}}
    with pytest.raises(ToolArgumentsError, match="larger than 10,000 bytes .LAZYTOOLS_MAX_ARGUMENT_BYTES"):
        validate_arguments("t", schema, {"items": [1] * 6000}, Limits(timeout=5, max_bytes=10_000))
    assert validate_arguments("t", schema, {"items": [1] * 600}, Limits(timeout=5, max_bytes=10_000))


# -- item 10: what is logged and echoed is escaped and short ----------------------------------------------------------


@pytest.mark.process
async def test_hostile_names_are_escaped_and_cut_in_logs_and_errors(caplog: pytest.LogCaptureFixture,
                                                                     catalog: Catalog) -> None:
    caplog.set_level(logging.INFO)
    server = build_server(catalog, make_settings(mode="proxy"))
    forged = "x\n2026-01-01 INFO lazytools: forged line" + "y" * 3_000_000
    async with client(server) as c:
        unknown = await c.call_tool(forged, {})
        by_invoke = await c.call_tool("invoke_tool", {"tool_name": forged, "arguments": {}})
        group = await c.call_tool("search_tools", {"group": forged})
    for result in (unknown, by_invoke, group):
        assert result.is_error and len(text_of(result)) < 2000, len(text_of(result))
        assert "\\n2026-01-01" in text_of(result) and "(+2,999,8" in text_of(result)
    for record in caplog.records:
        message = record.getMessage()
        assert "\n" not in message and len(message) < 2000, message[:300]
    assert any("\\n2026-01-01 INFO" in r.getMessage() for r in caplog.records)


async def test_a_long_query_that_matches_nothing_is_not_echoed_whole(catalog: Catalog) -> None:
    """The query may be 8,000 characters (the schema's maxLength): "No tool here fits" quotes the start of it and says
    how much was cut, rather than handing the model its own 8 KB back."""
    query = "qqzzx\n" * 1_333  # no tool has that word; the newlines must not break the answer's lines either
    async with client(build_server(catalog, make_settings(mode="proxy"))) as c:
        answer = text_of(await c.call_tool("search_tools", {"query": query}))
    first = answer.splitlines()[0]
    assert first.startswith("No tool here fits 'qqzzx\\nqqzzx"), first[:100]
    assert f"(+{len(query.strip()) - 200:,} chars)" in first, first[-100:]
    assert len(answer) < 600, len(answer)


# -- item 11: config files -------------------------------------------------------------------------------------------


def _config(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "mcp.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def test_a_deeply_nested_config_is_a_clear_error(tmp_path: Path) -> None:
    deep = '{"mcpServers": {"a": {"command": "x", "args": ' + "[" * 100_000 + "]" * 100_000 + "}}}"
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(_config(tmp_path, deep), environ={})
    defaults = '{"mcpServers": {"a": {"command": "' + "${NOPE:-" * 5000 + "x" + "}" * 5000 + '"}}}'
    with pytest.raises(ConfigError, match=r"server 'a', field command: .*nested too deeply \(more than 16 levels"):
        load_config(_config(tmp_path, defaults), environ={})


def test_defaults_nest_as_deep_as_the_bound_and_no_deeper() -> None:
    assert expand_variables("${NOPE:-" * MAX_DEFAULT_DEPTH + "x" + "}" * MAX_DEFAULT_DEPTH, {}) == "x"
    with pytest.raises(ValueError, match="nested too deeply"):
        expand_variables("${NOPE:-" * (MAX_DEFAULT_DEPTH + 1) + "x" + "}" * (MAX_DEFAULT_DEPTH + 1), {})
    assert expand_variables("${A:-${B}} and ${NOPE:-}{}", {"B": "b"}) == "b and {}"


def test_a_config_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    latin1 = '{"mcpServers": {"café": {"command": "x"}}}'.encode("latin-1")
    with pytest.raises(ConfigError, match=r"not UTF-8 text \(byte 20 is b'\\xe9'\)"):
        load_config(_config(tmp_path, latin1), environ={})
    with_bom = '\ufeff{"mcpServers": {"café": {"command": "x"}}}'.encode()
    assert list(load_config(_config(tmp_path, with_bom), environ={}).servers) == ["café"]


def test_a_missing_working_directory_is_named_as_such(tmp_path: Path) -> None:
    config = _config(tmp_path, json.dumps({"mcpServers": {"a": {"command": sys.executable, "cwd": "nowhere"}}}))
    with pytest.raises(ConfigError, match=r"server 'a', field cwd: .*nowhere is not a directory"):
        load_config(config, environ={})


def test_defaults_nest_as_in_shells() -> None:
    environ = {"HOME": "/home/me", "EMPTY": ""}
    assert expand_variables("${NOPE:-${HOME}}/x", environ) == "/home/me/x"
    assert expand_variables("${NOPE:-${EMPTY:-${HOME}}}", environ) == "/home/me"
    assert expand_variables("${HOME:-${NOPE}}", environ) == "/home/me"  # an unused default is not expanded
    with pytest.raises(ValueError, match="NOPE is not set"):
        expand_variables("${EMPTY:-${NOPE}}", environ)


def test_include_and_exclude_patterns_ignore_case() -> None:
    entry = {"command": "x", "exclude": ["delete_*"], "include": ["*_EVERYTHING", "list*"]}
    config = parse_config({"mcpServers": {"a": entry}}, environ={})
    server = config.servers["a"]
    assert not server.allows("Delete_Everything") and not server.allows("DELETE_EVERYTHING")
    assert server.allows("Keep_Everything") and server.allows("List_Things") and not server.allows("other")
    assert server.unmatched_includes(["KEEP_everything"]) == ["list*"]


# -- item 9: the upstream line reader --------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 7, 300, 65536])
def test_the_line_reader_splits_any_chunking_and_answers_oversized_lines_by_id(chunk: int) -> None:
    long_first = b'{"jsonrpc":"2.0","id":7,"result":{"x":"' + b"a" * 500 + b'"}}'
    long_last = b'{"result":{"x":"' + b"b" * 500 + b'"},"jsonrpc":"2.0","id":"k"}'
    no_id = b'{"result":{"x":"' + b"c" * 500 + b'"}}'
    short = b'{"jsonrpc":"2.0","id":8,"result":{}}'
    data = b"\n".join([short, long_first, b"", long_last, no_id, short]) + b"\n" + short  # the last without \n
    reader = LineReader(200)
    lines = [line for i in range(0, len(data), chunk) for line in reader.feed(data[i:i + chunk])] + reader.end()
    parsed = [parse_line(line, 200) for line in lines]
    kinds = [type(item.message).__name__ if isinstance(item, SessionMessage) else type(item).__name__
             for item in parsed if item is not None]
    assert kinds == ["JSONRPCResponse", "JSONRPCError", "JSONRPCError", "ValueError", "JSONRPCResponse",
                     "JSONRPCResponse"]
    errors = [item.message for item in parsed if isinstance(item, SessionMessage)
              and isinstance(item.message, types.JSONRPCError)]
    assert [e.id for e in errors] == [7, "k"] and "it was not read" in errors[0].error.message


def test_an_answer_nested_too_deep_to_parse_fails_its_call_at_once() -> None:
    # Deeper than the parsers go, within the arrays and objects read (MAX_CONTAINERS).
    deep = b'{"jsonrpc":"2.0","id":9,"result":{"structuredContent":' + b"[" * 50_000 + b"]" * 50_000 + b"}}"
    parsed = parse_line(deep, 10**9)
    assert isinstance(parsed, SessionMessage) and isinstance(parsed.message, types.JSONRPCError)
    assert parsed.message.id == 9 and "could not be parsed" in parsed.message.error.message
    # A request of the upstream's own, nested as deep, is not mistaken for an answer to one of ours.
    request = (b'{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":'
               + b"[" * 50_000 + b"]" * 50_000 + b"}")
    assert not isinstance(parse_line(request, 10**9), SessionMessage)
    crowded = request.replace(b"[" * 50_000, b"[" * 200_000).replace(b"]" * 50_000, b"]" * 200_000)
    assert isinstance(parse_line(crowded, 10**9), ValueError)  # past the count: dropped, never parsed


def _in_flight(*ids: int | str) -> InFlight:
    flight = InFlight()
    for request_id in ids:
        flight.sent(types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params={}))
    return flight


def test_an_id_in_the_middle_is_read_only_when_it_is_the_one_request_in_flight_it_names() -> None:
    flight = _in_flight(7, 70, "k")
    crowd = b",".join([b"[]"] * (MAX_CONTAINERS + 5))
    line = b'{"jsonrpc":"2.0","result":{"rows":[%s]},"id":%s,"more":[%s]}'
    for written, meant in [(b"7", 7), (b"70", 70), (b' "k" ', "k")]:
        parsed = parse_line(line % (crowd, written, crowd), 10**9, flight)
        assert isinstance(parsed, SessionMessage) and isinstance(parsed.message, types.JSONRPCError)
        assert parsed.message.id == meant and "arrays and objects" in parsed.message.error.message
    for written in (b"700", b'"7"', b"8"):  # not in flight (a string is not a number)
        assert isinstance(parse_line(line % (crowd, written, crowd), 10**9, flight), ValueError)
    two = line % (crowd + b',{"id":70}', b"7", crowd)  # which one it answers cannot be told
    assert isinstance(parse_line(two, 10**9, flight), ValueError)
    request = b'{"jsonrpc":"2.0","method":"x","params":{"rows":[%s]},"id":7,"more":[]}' % crowd
    assert isinstance(parse_line(request, 10**9, flight), ValueError)  # a request of the upstream's own
    flight.sent(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 7}))
    flight.answered(SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=70, result={})))
    assert flight.keys() == [b'"k"']


@pytest.mark.parametrize("chunk", [1000, 4093, 65536, 10**7])
def test_a_line_too_long_to_hold_is_told_by_the_one_id_in_flight_it_names_wherever_the_cuts(chunk: int) -> None:
    flight = _in_flight(7, 70)
    line = b'{"jsonrpc":"2.0","result":{"text":"%s"},"id" : 70 ,"more":"%s"}\n' % (b"x" * 300_000, b"y" * 2_000)
    for start in range(0, 40, 3):  # the key cut at every place, for a small chunk
        reader = LineReader(10_000, flight)
        pieces = [line[:start + 300_030]] + [line[i:i + chunk] for i in range(start + 300_030, len(line), chunk)]
        lines = [part for piece in pieces for part in reader.feed(piece)]
        parsed = [parse_line(part, 10_000, flight) for part in lines]
        assert len(parsed) == 1 and isinstance(parsed[0], SessionMessage), (chunk, start)
        assert parsed[0].message.id == 70 and "more than lazytools reads" in parsed[0].message.error.message
    reader = LineReader(10_000, _in_flight(8))
    assert isinstance(parse_line(reader.feed(line)[0], 10_000, flight), ValueError)  # no id in flight named


# -- a client that does not read lazytools' stderr ------------------------------------------------------------------


async def _line_with_id(stdout: Any, ident: int, lines: list[bytes]) -> dict[str, Any]:
    """The next message on `stdout` answering `ident` (others kept in `lines`)."""
    buffer = b""
    while True:
        while b"\n" not in buffer:
            buffer += await stdout.receive()
        line, buffer = buffer.split(b"\n", 1)
        lines.append(line)
        message = json.loads(line)
        if message.get("id") == ident:
            return message


async def _chatty_session(tmp_path: Path, process: Any, seen: list[bytes]) -> None:
    """Over `process`'s stdio: a handshake, a call to an upstream tool that writes 3 MB to its stderr (which
    lazytools relays as log lines), then another call and a ping, each answered."""
    async def send(message: dict[str, Any]) -> None:
        await process.stdin.send(json.dumps(message).encode() + b"\n")

    await send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    await _line_with_id(process.stdout, 0, seen)
    await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    calls = [("h__chatty", {"size": 3_000_000}), ("h__echo", {"text": "after"})]
    for ident, (name, arguments) in enumerate(calls, start=1):
        await send({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {
            "name": "invoke_tool", "arguments": {"tool_name": name, "arguments": arguments}}})
        answer = await _line_with_id(process.stdout, ident, seen)
        assert not answer["result"].get("isError"), answer
    answered = b"\n".join(seen)
    assert b"said it all" in answered and b'{\\"text\\": \\"after\\"}' in answered
    await send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    assert (await _line_with_id(process.stdout, 9, seen))["result"] == {}


def _chatty_command(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"h": hostile(timeout=20)}}))
    command = [sys.executable, "-m", "lazytools", "--config", str(config), "--log-level", "INFO"]
    return command, {**os.environ, "LAZYTOOLS_MODE": "proxy", "PYTHONPATH": SOURCE, "LAZYTOOLS_CACHE_DIR": str(tmp_path)}


@pytest.mark.process
async def test_a_stderr_no_one_reads_stops_no_session(tmp_path: Path) -> None:
    """A client that puts lazytools' stderr on a pipe and does not read it: the pipe fills (64 KiB) while an
    upstream writes megabytes to its own stderr. Written by the event loop, the first blocked write stopped every
    request; now the calls and pings go on, the lines that did not fit are dropped, and their count is said once
    stderr is read."""
    command, env = _chatty_command(tmp_path)
    seen: list[bytes] = []
    said = bytearray()
    with anyio.fail_after(120):  # a guard against a hang, not a measure of speed
        async with await anyio.open_process(command, env=env, cwd=str(tmp_path)) as process:
            assert process.stdin is not None and process.stdout is not None and process.stderr is not None
            await _chatty_session(tmp_path, process, seen)

            async def read() -> None:
                async for chunk in process.stderr:  # type: ignore[union-attr]
                    said.extend(chunk)

            async with anyio.create_task_group() as tg:
                tg.start_soon(read)  # read at last: what was held is written, then the count of what was not
                await process.stdin.aclose()
                await process.wait()
    assert b"c" * 99 in said and b"log lines were dropped: they came faster than stderr took them" in said


@pytest.mark.process
async def test_a_stderr_no_one_reads_does_not_keep_lazytools_from_exiting(tmp_path: Path) -> None:
    """The same client closes stdin without ever reading stderr: lazytools exits (what its log writer could not
    write is lost), where waiting for that writer kept it running until someone read its stderr."""
    command, env = _chatty_command(tmp_path)
    with anyio.fail_after(120):  # a guard against a hang, not a measure of speed
        async with await anyio.open_process(command, env=env, cwd=str(tmp_path)) as process:
            assert process.stdin is not None
            await _chatty_session(tmp_path, process, [])
            await process.stdin.aclose()
            assert await process.wait() == 0
