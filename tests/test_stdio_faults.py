"""Garbage on stdin, and shutdown: every bad line gets a JSON-RPC error or is dropped, then service goes on."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.process  # every test here starts lazytools or an upstream as a child process

INIT = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]
LIST = {"jsonrpc": "2.0", "id": 99, "method": "tools/list"}

GARBAGE = {
    "not json": "this is not json",
    "truncated": '{"jsonrpc": "2.0", "id": 2',
    "wrong version": json.dumps({"jsonrpc": "1.0", "id": 3, "method": "tools/list"}),
    "unknown method": json.dumps({"jsonrpc": "2.0", "id": 4, "method": "no/such/method"}),
    "array": json.dumps([1, 2, 3]),
    "id only": json.dumps({"id": 5}),
    "arguments not an object": json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                                           "params": {"name": "search_tools", "arguments": "x"}}),
    "huge query": json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                              "params": {"name": "search_tools", "arguments": {"query": "x" * 2_000_000}}}),
    "deeply nested": "[" * 100_000 + "]" * 100_000,
    "binary junk": "\x00\x01\x02\xff",
}


def _exchange(tmp_path: Path, lines: list[str], wait_for: frozenset[int] = frozenset({1, 99}),
              list_after: int | None = None) -> tuple[list[dict[str, object]], str]:
    """Send the handshake, `lines` and a tools/list (once request `list_after` is answered, as a client re-lists
    after a search; else at once); read until the ids in `wait_for` are answered; close stdin."""
    with subprocess.Popen([sys.executable, "-m", *ARGS], cwd=tmp_path, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace") as proc:
        return _drive(proc, lines, wait_for, list_after)


def _drive(proc: subprocess.Popen[str], lines: list[str], wait_for: frozenset[int], list_after: int | None = None
           ) -> tuple[list[dict[str, object]], str]:
    watchdog = threading.Timer(120, proc.kill)  # a hung server fails the test instead of hanging it
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        first = [*(json.dumps(m) for m in INIT), *lines, *([json.dumps(LIST)] if list_after is None else [])]
        proc.stdin.write("\n".join(first) + "\n")
        proc.stdin.flush()
        messages: list[dict[str, object]] = []
        while not wait_for <= {m.get("id") for m in messages}:
            line = proc.stdout.readline()
            assert line, f"server stopped early: {proc.stderr.read()[-2000:]}"
            messages.append(json.loads(line))  # every line on stdout must be a JSON message
            if list_after is not None and messages[-1].get("id") == list_after:
                proc.stdin.write(json.dumps(LIST) + "\n")  # requests in flight together may be answered in any order
                proc.stdin.flush()
        proc.stdin.close()  # EOF: the server must exit by itself, cleanly
        assert proc.wait(timeout=60) == 0
        return messages, proc.stderr.read()
    finally:
        watchdog.cancel()
        proc.kill()


ARGS = ["lazytools"]


def test_garbage_is_answered_or_dropped_and_service_goes_on(tmp_path: Path) -> None:
    """Every kind of garbage in one process, each followed by a tools/list that must still be served."""
    names = list(GARBAGE)
    lines: list[str] = []
    for number, name in enumerate(names):
        lines += [GARBAGE[name], json.dumps({**LIST, "id": 1000 + number})]
    messages, _ = _exchange(tmp_path, lines, wait_for=frozenset({1, 99, *(1000 + n for n in range(len(names)))}))
    by_id = {m.get("id"): m for m in messages}
    for number, name in enumerate(names):
        listed = by_id[1000 + number]
        assert "result" in listed, name
        assert listed["result"]["tools"][0]["name"] == "search_tools", name  # type: ignore[index]
    for message in messages:
        if message.get("id") not in {1, 99, *(1000 + n for n in range(len(names)))}:
            assert "error" in message or message["result"]["isError"] is True, message  # type: ignore[index]
            assert len(json.dumps(message)) < 20_000  # a huge input does not come back as a huge error
    (unknown,) = [m for m in messages if m.get("id") == 4]
    assert unknown["error"]["code"] == -32601  # type: ignore[index]  # method not found
    (bad_arguments,) = [m for m in messages if m.get("id") == 6]
    assert "error" in bad_arguments or bad_arguments["result"]["isError"] is True  # type: ignore[index]


def test_sigterm_exits_cleanly(tmp_path: Path) -> None:
    with subprocess.Popen([sys.executable, "-m", *ARGS], cwd=tmp_path, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            for message in [*INIT, LIST]:
                proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
            assert answers[1]["id"] == 99  # serving: now stop it
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 143
            assert "received SIGTERM" in proc.stderr.read()
        finally:
            proc.kill()


def test_an_integer_too_long_for_python_gets_an_error_not_silence(tmp_path: Path) -> None:
    """Python converts at most 4,300 digits: such a line could not be parsed, and went unanswered (the client
    waited for ever). Its request's id is read when it can be; else the error has id null, as a parse error."""
    digits = "1" + "0" * 5000
    call = ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "search_tools", '
            '"arguments": {"query": "x", "limit": %s}}}' % digits)
    long_id = '{"jsonrpc": "2.0", "id": %s, "method": "ping"}' % digits
    notification = '{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": %s}}' % digits
    in_a_string = ('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "search_tools", '
                   '"arguments": {"query": "order %s"}}}' % digits)  # text, served as over HTTP
    messages, _ = _exchange(tmp_path, [call, long_id, notification, "", in_a_string],
                            wait_for=frozenset({1, 7, 8, None, 99}))
    errors = {m.get("id"): m["error"] for m in messages if "error" in m}
    assert errors[7]["code"] == -32600 and "4,300 digits" in errors[7]["message"]  # type: ignore[index]
    assert errors[None]["code"] == -32700  # type: ignore[index]
    assert 8 not in errors and any(m.get("id") == 8 and "result" in m for m in messages)
    # the notification and the blank line are owed nothing; service went on (tools/list, id 99)
    assert sorted(repr(m.get("id")) for m in messages if "method" not in m) == ["1", "7", "8", "99", "None"]


def test_lines_the_sdk_cannot_read_get_an_error_not_silence(tmp_path: Path) -> None:
    """Python's json reads a lone surrogate escape, the SDK's parser refuses it; a batch or a request without a
    method the SDK refuses too. Each went unanswered (the client waited for ever); now each gets its JSON-RPC
    error with its id (id null when none can be read), a notification nothing, and the session goes on."""
    call = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
    lines = [
        call % ("8", "search_tools", '{"query":"\\ud800 hash"}'),  # in a tool argument's value
        call % ('"s-12"', "search_tools", '{"\\ud800":"x"}'),  # in an argument's name; a string id
        call % ("13", "search_\\ud800tools", "{}"),  # in the tool's name
        '[{"jsonrpc":"2.0","id":11,"method":"tools/list"}]',  # a batch
        '{"jsonrpc":"2.0","id":9}',  # no method
        '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"\\ud800","progress":1}}',
        '{"jsonrpc":"2.0","id":14,"result":"\\ud800"}',  # an answer the client sent: never answered
        "this is not json",
        json.dumps({"jsonrpc": "2.0", "id": 50, "method": "ping"}),
    ]
    messages, _ = _exchange(tmp_path, lines, wait_for=frozenset({1, 50, 99}))
    errors = [(m.get("id"), m["error"]["code"]) for m in messages if "error" in m]  # type: ignore[index]
    assert sorted(errors, key=repr) == sorted([(8, -32700), ("s-12", -32700), (13, -32700), (None, -32600),
                                               (9, -32600), (None, -32700)], key=repr)
    by_id = {m.get("id"): m for m in messages if "result" in m}
    assert by_id[50]["result"] == {} and "tools" in by_id[99]["result"]  # type: ignore[operator]
    assert len(messages) == 9  # handshake, six errors, the ping, tools/list: nothing for the notification
    assert all(len(json.dumps(m)) < 1000 for m in messages if "error" in m)  # the input is not echoed


def test_a_line_nested_deeper_than_the_parser_reads_is_told_so(tmp_path: Path) -> None:
    """Valid JSON nested past the SDK parser's 200 levels was answered as invalid JSON or a lone surrogate; now the
    error says how deep the line may nest: with its id as an invalid request when the id can be read (past the
    thousand levels Python's json reads too, from the line's top level), else a parse error with id null. A real
    lone surrogate still gets its own message."""

    def call(ident: int, levels: int) -> str:
        # The message, its params and their arguments are three levels; the argument `x` nests the rest.
        value = "[" * (levels - 3) + "1" + "]" * (levels - 3)
        return ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search_tools",'
                '"arguments":{"query":"a","x":%s}}}' % (ident, value))

    deep = "[" * 5_000 + "]" * 5_000  # past Python's thousand levels, within the count of arrays read
    lines = [call(20, 200), call(21, 201), call(22, 5_000),
             '{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"search_tools",'
             '"arguments":{"query":"\\ud800"}}}',
             # The id after 80 KB: past the 64 KiB read for it, so a parse error with id null.
             '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search_tools","arguments":{"pad":"%s",'
             '"x":%s}},"id":24}' % ("p" * 70_000, deep)]
    messages, _ = _exchange(tmp_path, lines, wait_for=frozenset({1, 20, 21, 22, None, 23, 99}))
    by_id = {m.get("id"): m for m in messages}
    assert "result" in by_id[20], by_id[20]  # 200 levels are read (and search_tools refuses the extra argument)
    for ident in (21, 22):
        assert by_id[ident]["error"] == {"code": -32600, "message": "Invalid request: it nests arrays and objects "
                                                                    "more than 200 levels deep, more than this server "
                                                                    "reads"}
    assert by_id[None]["error"] == {"code": -32700, "message": "Parse error: arrays and objects nested more than "
                                                               "200 levels deep, more than this server reads"}
    assert by_id[23]["error"]["code"] == -32700  # type: ignore[index]
    assert "unpaired surrogate escape" in by_id[23]["error"]["message"]  # type: ignore[index]


def test_a_request_whose_id_is_not_a_string_or_integer_gets_an_error_not_silence(tmp_path: Path) -> None:
    """The SDK reads such a request as a notification and answers nothing, so the client waited for ever (over
    HTTP it gets 400); each now gets -32600 with id null, a true notification still nothing, and service goes on."""
    bad_ids = ["1.5", "1e3", "null", "true", "[]", "{}", "NaN"]
    lines = [f'{{"jsonrpc":"2.0","id":{ident},"method":"ping"}}' for ident in bad_ids]
    lines.append('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"id","progress":1,'
                 '"message":"an \\"id\\" inside"}}')
    lines.append(json.dumps({"jsonrpc": "2.0", "id": 50, "method": "ping"}))
    messages, _ = _exchange(tmp_path, lines, wait_for=frozenset({1, 50, 99}))
    errors = [m for m in messages if "error" in m]
    assert len(errors) == len(bad_ids)
    assert all(m.get("id") is None and m["error"]["code"] in (-32600, -32700) for m in errors)  # type: ignore[index]
    assert sum("must be a string or an integer" in m["error"]["message"] for m in errors) >= 6  # type: ignore[index]
    assert len(messages) == 3 + len(bad_ids)  # handshake, the errors, the ping, tools/list: nothing for the notification


def test_an_id_that_cannot_be_sent_back_is_refused_and_the_server_goes_on(tmp_path: Path) -> None:
    """An id holding a lone surrogate (the escape \\ud800, which Python's json reads) cannot be written into an
    answer: the SDK's writer raised on it and the server exited. Now such a line gets its error with id null (a
    progressToken of that kind, with the request's id), and the session goes on."""
    deep = "[" * 300 + "]" * 300
    lines = ['{"jsonrpc":"2.0","id":"\\ud800","method":"tools/list"}',
             '{"jsonrpc":"2.0","id":"\\ud800","method":"tools/list","params":{"x":%s}}' % deep,
             '{"jsonrpc":"2.0","id":30,"method":"tools/list","params":{"_meta":{"progressToken":"\\udfff"}}}',
             json.dumps({"jsonrpc": "2.0", "id": 50, "method": "ping"})]
    messages, _ = _exchange(tmp_path, lines, wait_for=frozenset({1, 30, 50, 99}))
    errors = [m for m in messages if "error" in m]
    # The SDK's parser refuses the escape: a parse error each, with the id only where it can be sent back.
    assert [(m.get("id"), m["error"]["code"]) for m in errors] == [  # type: ignore[index]
        (None, -32700), (None, -32700), (30, -32700)]
    assert all("unpaired surrogate" in m["error"]["message"] for m in errors)  # type: ignore[index]
    by_id = {m.get("id"): m for m in messages}
    assert by_id[50]["result"] == {} and "tools" in by_id[99]["result"]  # type: ignore[operator]
