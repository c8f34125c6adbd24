"""What one request may make the server keep or send back: an initialize (its params kept by the SDK for the
session's whole life, its body until the session's next message), a request's id (in its answer) and progressToken
(in each progress notification). Over real HTTP and real stdio, with raw messages and with the SDK's own clients;
each refusal is a small JSON-RPC error naming the bound, and service goes on."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from lazytools.jsonshape import containers
from lazytools.settings import Settings
from lazytools.transports.message_bounds import NESTED, top_level
from lazytools.transports.message_bounds import request_id as id_of

from .helpers import leaves_behind
from .test_http import ACCEPT, decode, lazy, open_raw_session, rpc, serving, session
from .test_reliability_wire import ENVELOPE, MODERN
from .test_stdio_faults import INIT, LIST, _exchange

SMALL = 2_000
"""Bytes of the largest refusal: none carries back what it refuses."""

DEFAULT_BOUND = "16,384 bytes"


def initialize(request_id: int = 1, **client_info: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "Visual Studio Code", "version": "1", **client_info}}}


def huge_name() -> dict[str, Any]:
    return initialize(name="n" * 3_500_000)


def huge_capabilities() -> dict[str, Any]:
    message = initialize()
    message["params"]["capabilities"] = {"roots": {}, "experimental": {f"x{i}": {"v": "y" * 1000} for i in range(3000)}}
    return message


def extra_fields() -> dict[str, Any]:
    return initialize(**{f"field{i}": "z" * 100 for i in range(20_000)})


def many_values() -> dict[str, Any]:
    """600 empty objects: under 2 KB, but each one a Python dict the session would keep."""
    message = initialize()
    message["params"]["capabilities"] = {"experimental": {"x": {"list": [{}] * 600}}}
    return message


RICH = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25",
    "capabilities": {
        "roots": {"listChanged": True}, "sampling": {"context": {}, "tools": {}}, "elicitation": {"form": {}, "url": {}},
        "tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}},
        "experimental": {"vendor.feature": {"enabled": True}}},
    "clientInfo": {
        "name": "Visual Studio Code", "title": "Visual Studio Code", "version": "1.107.0",
        "description": "Code editing. Redefined.", "websiteUrl": "https://code.visualstudio.com",
        "icons": [{"src": "data:image/png;base64," + "A" * 4000, "mimeType": "image/png", "sizes": ["48x48"]},
                  *({"src": f"https://code.visualstudio.com/icon-{theme}.svg", "mimeType": "image/svg+xml",
                     "sizes": ["any"], "theme": theme} for theme in ("dark", "light"))]}}}
"""Every capability of the 2025-11-25 specification and three icons, one inline: 46 values, 4.8 KB."""


def of_size(size: int) -> bytes:
    """An initialize body of exactly `size` bytes, two bytes a letter of the client's name."""
    message = initialize(name="")
    missing = size - len(json.dumps(message, separators=(",", ":")).encode())
    message["params"]["clientInfo"]["name"] = "é" * (missing // 2) + "a" * (missing % 2)
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    assert len(body) == size
    return body


JSON = {"accept": ACCEPT, "content-type": "application/json"}


def check_refused(response: httpx2.Response, code: int, request_id: Any, *words: str) -> None:
    assert response.status_code == 400, response.text[:300]
    assert len(response.content) < SMALL
    assert "mcp-session-id" not in response.headers
    answer = decode(response)
    assert answer["id"] == request_id and answer["error"]["code"] == code, answer
    for word in words:
        assert word in answer["error"]["message"], answer


# -- initialize over HTTP ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("message", [huge_name, huge_capabilities, extra_fields, many_values])
async def test_an_initialize_too_large_to_keep_is_refused_and_opens_no_session(message: Any) -> None:
    # One session at most: had a refused initialize kept one, the valid one after it would get 503.
    async with serving(lazy(max_sessions=1)) as url, httpx2.AsyncClient(timeout=60) as http:
        for _ in range(3):
            response = await http.post(url, json=message(), headers={"accept": ACCEPT})
            words = ["at most 256 JSON values"] if message is many_values else [DEFAULT_BOUND,
                                                                                 "LAZYTOOLS_MAX_INITIALIZE_BYTES"]
            check_refused(response, types.INVALID_PARAMS, 1, *words)
        session_id = await open_raw_session(http, url)
        _, listed = await rpc(http, url, "tools/list", session_id=session_id)
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["search_tools", "invoke_tool"]


async def test_the_bound_counts_the_bytes_of_the_body_and_is_a_setting() -> None:
    async with serving(lazy(max_initialize_bytes=2048)) as url, httpx2.AsyncClient(timeout=60) as http:
        over = await http.post(url, content=of_size(2049), headers=JSON)
        check_refused(over, types.INVALID_PARAMS, 1, "at most 2,048 bytes", "this one takes 2,049")
        at = await http.post(url, content=of_size(2048), headers=JSON)
        assert at.status_code == 200 and at.headers["mcp-session-id"] and "result" in decode(at)


async def test_what_the_sdk_ignores_in_an_initialize_body_counts_too() -> None:
    """The session keeps the body of its last message whole: padding and unknown fields cost as much as params."""
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        plain = json.dumps(initialize())
        padded = plain[:-1] + " " * 3_500_000 + "}"
        unknown = json.dumps({**initialize(), "junk": "j" * 3_500_000})
        for body in (padded, unknown):
            check_refused(await http.post(url, content=body, headers=JSON), types.INVALID_PARAMS, 1, DEFAULT_BOUND)


async def test_a_client_declaring_every_capability_with_icons_is_served() -> None:
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        answer = await http.post(url, json=RICH, headers={"accept": ACCEPT})
        assert answer.status_code == 200 and answer.headers["mcp-session-id"] and "result" in decode(answer)


async def test_an_initialize_again_too_large_is_refused_and_the_session_goes_on() -> None:
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        session_id = await open_raw_session(http, url)
        again = await http.post(url, json=huge_name(), headers={"accept": ACCEPT, "mcp-session-id": session_id})
        check_refused(again, types.INVALID_PARAMS, 1, DEFAULT_BOUND)
        _, listed = await rpc(http, url, "tools/list", session_id=session_id)
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["search_tools", "invoke_tool"]


async def test_the_sdks_client_with_a_huge_client_name_is_told_the_bound_over_http() -> None:
    async with serving(lazy()) as url:
        with pytest.raises(BaseException) as refused:
            async with Client(url, mode="legacy", client_info=types.Implementation(name="n" * 20_000, version="1")):
                pass
        assert refused.group_contains(MCPError, match=f"at most {DEFAULT_BOUND} \\(LAZYTOOLS_MAX_INITIALIZE_BYTES\\)")
        async with Client(url, mode="legacy", client_info=types.Implementation(name="mcp", version="1")) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ["search_tools", "invoke_tool"]


async def test_a_long_client_name_within_the_bound_is_cut_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with serving(lazy()) as url, session(url, name="Visual Studio Code" + "c" * 10_000) as client:
        await client.list_tools()
    opened = [record.getMessage() for record in caplog.records if "surface" in record.getMessage()]
    assert opened and all(len(line) < 500 for line in opened), [line[:300] for line in opened]
    assert any("'Visual Studio Code" in line and "(+" in line for line in opened)


# -- ids and progress tokens over HTTP -----------------------------------------------------------------------------


def request(request_id: Any, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": {"_meta": meta or {}}}


@pytest.mark.parametrize("era", ["session", "no session", MODERN])
async def test_an_id_or_progress_token_too_long_to_send_back_is_refused_in_every_kind_of_request(era: str) -> None:
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        headers = {"accept": ACCEPT}
        envelope: dict[str, Any] = {}
        if era == "session":
            headers["mcp-session-id"] = await open_raw_session(http, url)
        elif era == MODERN:
            headers.update({"mcp-protocol-version": MODERN, "mcp-method": "tools/list"})
            envelope = ENVELOPE

        async def post(message: dict[str, Any]) -> httpx2.Response:
            return await http.post(url, json=message, headers=headers)

        for request_id in ("i" * 3_000_000, "i" * 257, 10**256, -(10**256)):
            answer = await post(request(request_id, envelope))
            check_refused(answer, types.INVALID_REQUEST, None, "an id may hold at most 256 characters (or digits)")
        for token in ("t" * 3_000_000, 10**256):
            answer = await post(request(8, {**envelope, "progressToken": token}))
            check_refused(answer, types.INVALID_PARAMS, 8, "a progressToken may hold at most 256")
        for request_id in ("i" * 256, 10**256 - 1):  # at the bound: served, the id sent back whole
            served = decode(await post(request(request_id, {**envelope, "progressToken": "t" * 256})))
            assert served["id"] == request_id and served["result"]["tools"], served


async def test_other_refusals_do_not_send_back_an_id_past_the_bound() -> None:
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        long_id = json.dumps("i" * 3_000_000).encode()
        params_a_list = b'{"jsonrpc":"2.0","id":' + long_id + b',"method":"tools/list","params":[1]}'
        surrogate = b'{"jsonrpc":"2.0","id":' + long_id + b',"method":"tools/list","params":{"x":"\\ud800"}}'
        for body in (params_a_list, surrogate):
            answer = await http.post(url, content=body, headers={"accept": ACCEPT, "content-type": "application/json"})
            assert answer.status_code == 400 and len(answer.content) < SMALL and decode(answer)["id"] is None


# -- stdio ---------------------------------------------------------------------------------------------------------


@pytest.mark.process
async def test_the_sdks_client_with_a_huge_client_name_is_told_the_bound_over_stdio(tmp_path: Path) -> None:
    # The SDK hands a child only a few of this process's variables: PYTHONPATH goes too, for the lazytools under test.
    path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    params = StdioServerParameters(command=sys.executable, args=["-m", "lazytools"], cwd=str(tmp_path),
                                   env={"LAZYTOOLS_FILES_ROOT": str(tmp_path), **path})
    with pytest.raises(BaseException) as refused:
        async with Client(params, mode="legacy", client_info=types.Implementation(name="n" * 20_000, version="1")):
            pass
    assert refused.group_contains(MCPError, match=f"at most {DEFAULT_BOUND} \\(LAZYTOOLS_MAX_INITIALIZE_BYTES\\)")


@pytest.mark.process
def test_stdio_refuses_what_it_cannot_keep_or_send_back_and_goes_on(tmp_path: Path) -> None:
    lines = [json.dumps(m) for m in (
        huge_name() | {"id": 2}, huge_capabilities() | {"id": 3}, many_values() | {"id": 4},
        request("i" * 3_000_000), request(10**300), request(5, {"progressToken": "t" * 3_000_000}),
        request("i" * 256))]
    messages, _ = _exchange(tmp_path, lines, wait_for=frozenset({1, 2, 3, 4, 5, "i" * 256, 99}))  # type: ignore[arg-type]
    by_id = {json.dumps(m.get("id")): m for m in messages}
    for request_id, words in (("2", DEFAULT_BOUND), ("3", DEFAULT_BOUND), ("4", "at most 256 JSON values")):
        error = by_id[request_id]["error"]
        assert error["code"] == types.INVALID_PARAMS and words in error["message"]  # type: ignore[index]
    assert by_id["5"]["error"]["code"] == types.INVALID_PARAMS  # type: ignore[index]
    unnamed = [m for m in messages if m.get("id") is None]
    assert len(unnamed) == 2 and all("an id may hold at most 256" in m["error"]["message"]  # type: ignore[index]
                                     for m in unnamed)
    assert by_id[json.dumps("i" * 256)]["result"]["tools"]  # type: ignore[index]
    assert by_id["99"]["result"]["tools"][0]["name"] == "search_tools"  # type: ignore[index]
    assert all(len(json.dumps(m)) < SMALL for m in messages if m.get("id") != "i" * 256 and "error" in m)


@pytest.mark.process
def test_stdio_from_a_file_refuses_an_initialize_too_large_too(tmp_path: Path) -> None:
    """A regular file on stdin is read by the SDK's own reader, not lazytools' pipe reader: the bound holds there."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text("\n".join(json.dumps(m) for m in (huge_name() | {"id": 0}, *INIT, LIST)) + "\n")
    with requests.open("rb") as stdin, subprocess.Popen([sys.executable, "-m", "lazytools"], cwd=tmp_path, stdin=stdin,
                                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        watchdog = threading.Timer(120, proc.kill)  # a hung server fails the test instead of hanging it
        watchdog.start()
        try:
            out, _ = proc.communicate()
        finally:
            watchdog.cancel()
    answers = [json.loads(line) for line in out.splitlines()]
    refused, initialized, listed = [answer for answer in answers if "id" in answer]
    assert refused["id"] == 0 and DEFAULT_BOUND in refused["error"]["message"] and len(json.dumps(refused)) < SMALL
    assert initialized["id"] == 1 and "result" in initialized
    assert listed["id"] == 99 and listed["result"]["tools"][0]["name"] == "search_tools"


async def test_a_session_that_sent_one_large_request_and_went_quiet_keeps_nothing_of_it() -> None:
    # The SDK's dispatcher holds the last message a session sent (with its HTTP body) until the next one, and this
    # client sends no next one: after the answer, the server hands the session a message of no weight instead.
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        session_id = await open_raw_session(http, url)

        async def large_ping() -> None:
            # A field the SDK ignores, in a request that is answered at once.
            body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {}, "padding": "p" * 3_000_000})
            response = await http.post(url, content=body.encode(), headers={
                "accept": ACCEPT, "content-type": "application/json", "mcp-session-id": session_id})
            assert response.status_code == 200 and decode(response)["result"] == {}

        await leaves_behind(large_ping, 1_000_000)
        # The session serves on.
        answer, message = await rpc(http, url, "tools/list", session_id=session_id, request_id=8)
        assert answer.status_code == 200 and message["result"]["tools"]


async def test_a_body_nested_deeper_than_the_parser_reads_is_told_so_over_http() -> None:
    # As over stdio (test_stdio_faults.py): 200 levels are read, 201 are refused with the request's id and the bound,
    # not with the parser's "recursion limit exceeded at line 1 column ...".
    def call(ident: int, levels: int) -> bytes:
        # The message, its params and their arguments are three levels; the argument `x` nests the rest.
        value = "[" * (levels - 3) + "1" + "]" * (levels - 3)
        return (('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search_tools",'
                 '"arguments":{"query":"a","x":%s}}}') % (ident, value)).encode()

    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        session_id = await open_raw_session(http, url)
        headers = {"accept": ACCEPT, "content-type": "application/json", "mcp-session-id": session_id}
        read = await http.post(url, content=call(20, 200), headers=headers)
        assert read.status_code == 200 and "result" in decode(read)  # search_tools refuses the extra argument
        refused = await http.post(url, content=call(21, 201), headers=headers)
        assert refused.status_code == 400
        assert refused.json() == {"jsonrpc": "2.0", "id": 21, "error": {
            "code": -32600, "message": "Invalid request: it nests arrays and objects more than 200 levels deep, "
                                       "more than this server reads"}}
        assert len(refused.content) < SMALL
        # Past the thousand levels Python's json reads, the id is read from the top level: the same refusal.
        deeper = await http.post(url, content=call(22, 5_000), headers=headers)
        assert deeper.status_code == 400 and deeper.json()["id"] == 22
        assert deeper.json()["error"] == refused.json()["error"]


async def test_an_id_that_cannot_be_sent_back_is_refused_over_http() -> None:
    # Python's json reads the escape \ud800 as a lone surrogate, which no answer can carry: 400, not a 500.
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        session_id = await open_raw_session(http, url)
        headers = {"accept": ACCEPT, "content-type": "application/json", "mcp-session-id": session_id}
        refused = await http.post(url, content=b'{"jsonrpc":"2.0","id":"\\ud800","method":"tools/list"}',
                                  headers=headers)
        assert refused.status_code == 400 and refused.json()["id"] is None
        assert "unpaired surrogate" in refused.json()["error"]["message"]
        answer, message = await rpc(http, url, "tools/list", session_id=session_id, request_id=9)
        assert answer.status_code == 200 and message["result"]["tools"]


@pytest.mark.parametrize(("text", "members"), [
    ('{"jsonrpc": "2.0", "id": 7, "method": "ping"}', {"jsonrpc": "2.0", "id": 7, "method": "ping"}),
    ('{"a": [1, {"b": "}"}], "id": "x\\"y", "n": null}', {"a": NESTED, "id": 'x"y', "n": None}),
    ('{}', {}),
    ('{"id": 1, "p": ' + "[" * 100_000 + "]" * 100_000 + "}", {"id": 1, "p": NESTED}),  # read past the cut: id first
    ('{"p": ' + "[" * 100_000 + "]" * 100_000 + ', "id": 1}', None),  # the id past the cut: unknown
    ("[1]", None), ('{"a": 1', None), ('{"a": 1} x', None), ('{"a" 1}', None), ("{,}", None), ('{"a": }', None),
])
def test_the_top_level_of_a_deep_object_is_read_without_its_depth(text: str, members: Any) -> None:
    assert top_level(text) == members
    assert top_level(text.encode()) == members


MAX_JSON_CONTAINERS = Settings.model_fields["max_message_containers"].default


def _arrays_and_objects(value: Any) -> int:
    pending, count = [value], 0
    while pending:
        item = pending.pop()
        if isinstance(item, dict | list):
            count += 1
            pending.extend(item.values() if isinstance(item, dict) else item)
    return count


@pytest.mark.parametrize("value", [
    {"a": [[]] * 10, "b": "x"},  # under the bound: the brackets are counted as they are
    {"s": "[" * 30_000, "t": ["{"] * 30_000, "real": [{}] * 100},  # brackets in strings are no arrays
    {"esc": ['\\[', '"{', '\\"[', "\\\\"] * 8_000, "x": [[1], {"k": "v"}] * 3_000},  # escapes before brackets
    {"deep": [[[[]]]] * 6_000, "s": "]" * 5_000 + '"' + "}" * 5_000},  # over the bound, as real arrays
    ["é[ü{" * 10_000, {"\ud83d": "\U0001f600" * 3}],  # text beyond ASCII
])
def test_the_arrays_and_objects_of_a_message_are_counted_without_parsing_it(value: Any) -> None:
    text = json.dumps(value)
    assert containers(text, MAX_JSON_CONTAINERS) == _arrays_and_objects(value)
    assert containers(text.encode(), MAX_JSON_CONTAINERS) == _arrays_and_objects(value)
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert containers(compact, MAX_JSON_CONTAINERS) == _arrays_and_objects(value)
    assert containers(compact.encode("utf-8", "surrogatepass"), MAX_JSON_CONTAINERS) == _arrays_and_objects(value)


def _crowded_call(ident: int, arrays: int) -> str:
    """A tools/call holding exactly `arrays` arrays and objects: the message, its params, its arguments and the
    list `x` are four; the rest are empty arrays in `x`."""
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {
        "name": "search_tools", "arguments": {"query": "a", "x": [[]] * (arrays - 4), "s": "[" * 50_000}}})


CROWDED = (f"Invalid request: it holds {MAX_JSON_CONTAINERS + 1:,} arrays and objects, more than the "
           f"{MAX_JSON_CONTAINERS:,} this server reads in one message (LAZYTOOLS_MAX_MESSAGE_CONTAINERS)")


async def test_a_body_of_more_arrays_and_objects_than_are_read_is_refused_over_http() -> None:
    # Millions of small arrays in 4 MiB held the event loop for seconds in the parsers; the count is read first.
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        session_id = await open_raw_session(http, url)
        headers = {"accept": ACCEPT, "content-type": "application/json", "mcp-session-id": session_id}
        read = await http.post(url, content=_crowded_call(30, MAX_JSON_CONTAINERS).encode(), headers=headers)
        assert read.status_code == 200 and "result" in decode(read)  # search_tools refuses the extra arguments
        refused = await http.post(url, content=_crowded_call(31, MAX_JSON_CONTAINERS + 1).encode(), headers=headers)
        assert refused.status_code == 400
        assert refused.json() == {"jsonrpc": "2.0", "id": 31, "error": {"code": -32600, "message": CROWDED}}
        attack = "[" + ",".join(["[" * 190 + "]" * 190] * 10_900) + "]"
        huge = await http.post(url, content=('{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":'
                                             '"search_tools","arguments":{"query":"a","x":%s}}}' % attack).encode(),
                               headers=headers)
        assert huge.status_code == 400 and huge.json()["id"] == 32 and len(huge.content) < SMALL
        assert "2,071,004 arrays and objects" in huge.json()["error"]["message"]
        answer, message = await rpc(http, url, "tools/list", session_id=session_id, request_id=33)
        assert answer.status_code == 200 and message["result"]["tools"]
    # A client that sends such data on purpose raises the bound.
    async with serving(lazy(max_message_containers=30_000)) as url, httpx2.AsyncClient(timeout=60) as http:
        session_id = await open_raw_session(http, url)
        headers = {"accept": ACCEPT, "content-type": "application/json", "mcp-session-id": session_id}
        read = await http.post(url, content=_crowded_call(34, MAX_JSON_CONTAINERS + 1).encode(), headers=headers)
        assert read.status_code == 200 and "result" in decode(read)


@pytest.mark.process
def test_a_line_of_more_arrays_and_objects_than_are_read_is_refused_over_stdio(tmp_path: Path) -> None:
    # Within the 64 KiB read for an id: a notification told from a request whose id comes later.
    notification = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
        "progressToken": "t", "progress": 1, "x": [[]] * (MAX_JSON_CONTAINERS + 1)}}, separators=(",", ":"))
    lines = [_crowded_call(30, MAX_JSON_CONTAINERS), _crowded_call(31, MAX_JSON_CONTAINERS + 1), notification,
             json.dumps({"jsonrpc": "2.0", "id": 50, "method": "ping"})]
    messages, stderr = _exchange(tmp_path, lines, wait_for=frozenset({1, 30, 31, 50, 99}))
    by_id = {m.get("id"): m for m in messages}
    assert "result" in by_id[30], by_id[30]
    assert by_id[31]["error"] == {"code": -32600, "message": CROWDED}
    assert by_id[50]["result"] == {} and "tools" in by_id[99]["result"]  # type: ignore[operator]
    assert len(messages) == 5  # handshake, two answers, the ping, tools/list: nothing for the notification
    assert "Dropped a message from the client holding 20,004 arrays and objects" in stderr


@pytest.mark.process
def test_a_stdio_line_longer_than_the_body_bound_is_skipped_and_answered(tmp_path: Path) -> None:
    # A line was held whole however long: gigabytes on one line were gigabytes of memory. Past the bound it is
    # skipped as it arrives; a request whose id is at its start gets an error naming its size.
    (tmp_path / ".env").write_text("LAZYTOOLS_MAX_BODY_BYTES=100000\n")
    pad = "p" * 300_000
    lines = [json.dumps({"jsonrpc": "2.0", "id": 40, "method": "tools/call",
                         "params": {"name": "search_tools", "arguments": {"query": pad}}}),
             # Its id last, as the TypeScript SDK writes it: read from the line's end.
             '{"method":"tools/call","params":{"pad":"%s"},"jsonrpc":"2.0","id":41}' % pad,
             '{"jsonrpc":"2.0","method":"tools/call","params":{"pad":"%s"},"id":43,"x":1}' % pad,  # neither: id null
             json.dumps({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
                         "params": {"name": "search_tools", "arguments": {"query": "p" * 90_000}}}),
             json.dumps({"jsonrpc": "2.0", "id": 50, "method": "ping"})]
    messages, _ = _exchange(tmp_path, lines, wait_for=frozenset({1, 40, 41, None, 42, 50, 99}))
    by_id = {m.get("id"): m for m in messages}
    size = len(lines[0]) + 1  # with its newline
    assert by_id[40]["error"] == {"code": -32600, "message": f"Invalid request: a message of {size:,} bytes, more "
                                                             "than this server reads (100,000; "
                                                             "LAZYTOOLS_MAX_BODY_BYTES)"}
    assert by_id[41]["error"]["message"].startswith("Invalid request: a message of 300,")  # type: ignore[index]
    assert by_id[None]["error"]["code"] == -32600  # type: ignore[index]
    assert "result" in by_id[42]  # within the bound: read (search_tools says the query is too long)
    assert by_id[50]["result"] == {} and "tools" in by_id[99]["result"]  # type: ignore[operator]
    assert len(messages) == 7


@pytest.mark.parametrize(("text", "ident"), [
    ('{"jsonrpc":"2.0","id":7,"method":"ping"}', 7),
    ('{"method":"tools/call","params":{"x":' + "[" * 40_000 + "]" * 40_000 + '},"jsonrpc":"2.0","id":"a-1"}', "a-1"),
    ('{"method":"m","params":{"x":' + "[" * 40_000 + "]" * 40_000 + ',"id":3},"jsonrpc":"2.0","id":8}', 8),
    ('{"method":"m","params":{"x":' + "[" * 40_000 + "]" * 40_000 + ',"id":3}}', None),  # only the params' own
    ('{"method":"m","params":{"x":"' + "p" * 70_000 + '\\"id\\":3}"}}', None),  # in a string
    ('{"method":"m","params":{"x":' + "[" * 40_000 + "]" * 40_000 + '},"id":9,"z":1}', None),  # in the middle
])
def test_a_requests_id_is_read_from_its_start_or_its_end(text: str, ident: Any) -> None:
    assert id_of(text) == ident
    assert id_of(text.encode()) == ident
