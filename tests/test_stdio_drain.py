"""End of input on stdio waits for the answers still owed, and only for those."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import AsyncIterator

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from lazytools.transports import stdio
from lazytools.transports.stdio import PipeWriter, ScreenedLines, Unanswered


def _request(request_id: int | str, method: str = "tools/list", **extra: object) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, **extra})


def _parsed(line: str) -> SessionMessage | Exception:
    """A line as the SDK's stdio reader hands it on: a message, or the exception it could not be parsed with."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def _answer(request_id: int | str) -> SessionMessage:
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={}))


def test_requests_are_owed_until_answered_or_cancelled() -> None:
    owed = Unanswered()
    owed.received(_parsed(_request(1)))
    owed.received(_parsed(_request("a")))
    owed.received(_parsed(_request(2)))
    assert len(owed) == 3
    owed.sent(_answer(1))
    owed.sent(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id="a", error=types.ErrorData(code=-1, message="x"))))
    assert len(owed) == 1
    owed.received(_parsed(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                     "params": {"requestId": 2}})))
    assert len(owed) == 0


@pytest.mark.parametrize("line", [
    "not json",
    json.dumps({"jsonrpc": "1.0", "id": 3, "method": "tools/list"}),  # the SDK drops it without an answer
    json.dumps([_request(4)]),
    json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    json.dumps({"jsonrpc": "2.0", "id": 5, "result": {}}),  # a client's answer to the server
    _request(6, "subscriptions/listen", params={}),  # open until the client cancels it
])
def test_what_the_server_never_answers_is_not_owed(line: str) -> None:
    owed = Unanswered()
    owed.received(_parsed(line))
    assert len(owed) == 0


async def test_drain_returns_when_the_last_answer_is_written() -> None:
    owed = Unanswered()
    owed.received(_parsed(_request(1)))
    owed.received(_parsed(_request(2)))
    order: list[str] = []

    async def answer() -> None:
        for request_id in (2, 1):
            await anyio.sleep(0)
            order.append(f"answer {request_id}")
            owed.sent(_answer(request_id))

    async with anyio.create_task_group() as tg:
        tg.start_soon(answer)
        await owed.drain()
        order.append("drained")
    assert order == ["answer 2", "answer 1", "drained"]


async def test_drain_gives_up_after_its_timeout_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    owed = Unanswered()
    owed.received(_parsed(_request(1)))
    with caplog.at_level(logging.WARNING, logger="lazytools.transports.stdio"):
        await owed.drain(timeout=0.01)
    assert len(owed) == 1
    assert "1 request(s) still unanswered" in caplog.text


async def _flush_until_the_pipe_is_full(writer: PipeWriter, message: str, tg: anyio.abc.TaskGroup) -> None:
    """Write `message` and start flushing it in `tg`; return once the pipe is full and the flush waits for room."""
    await writer.write(message)
    tg.start_soon(writer.flush)
    for _ in range(10_000):
        await anyio.sleep(0)
        if 0 < len(writer._pending) < len(message):  # noqa: SLF001
            break
    assert 0 < len(writer._pending) < len(message)  # noqa: SLF001


async def test_the_pipe_writer_sends_whole_messages_even_when_a_flush_is_cancelled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Written without a thread: a message larger than the pipe waits on the event loop for the reader, and a flush
    cancelled midway, with no reader to finish the message for, leaves the rest first in line, so the next message
    never lands inside it."""
    monkeypatch.setattr(stdio, "FINISH_TIMEOUT", 0.05)  # nobody reads until the flush has given up
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    writer = PipeWriter(write_fd)
    first, second = "a" * 300_000 + "\n", "b" * 10 + "\n"
    try:
        async with anyio.create_task_group() as tg:
            await _flush_until_the_pipe_is_full(writer, first, tg)
            tg.cancel_scope.cancel()
        await writer.write(second)
        received = bytearray()

        def read_all() -> None:
            while len(received) < len(first) + len(second):
                received.extend(os.read(read_fd, 65536))

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.flush)
            await anyio.to_thread.run_sync(read_all)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert received.decode() == first + second



async def test_a_cancelled_flush_finishes_the_message_a_reader_is_reading() -> None:
    """A stop (SIGTERM) while the client reads a large answer: the rest of that answer is written before the
    flush gives way, so the client never ends with a torn line."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    writer = PipeWriter(write_fd)
    message = "a" * 300_000 + "\n"
    received = bytearray()
    go = threading.Event()

    def read_message() -> None:
        go.wait(60)
        while not received.endswith(b"\n"):
            chunk = os.read(read_fd, 65536)
            if not chunk:  # the writer's end closed: the message ends torn
                return
            received.extend(chunk)

    reader = threading.Thread(target=read_message)
    reader.start()
    try:
        async with anyio.create_task_group() as tg:
            await _flush_until_the_pipe_is_full(writer, message, tg)
            tg.cancel_scope.cancel()
            go.set()  # the client keeps reading
        assert not writer._pending  # noqa: SLF001
        await anyio.to_thread.run_sync(reader.join, 60)
    finally:
        go.set()
        os.close(write_fd)
        reader.join(60)
        os.close(read_fd)
    assert received.decode() == message


async def test_the_pipe_writer_ends_the_session_once_the_reader_is_gone() -> None:
    """A client that closed its end: the answer is dropped (not an exception out of the transport) and the session
    is told, once."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    left: list[bool] = []
    writer = PipeWriter(write_fd, on_closed=lambda: left.append(True))
    try:
        for text in ("x\n", "y\n"):
            await writer.write(text)
            await writer.flush()
    finally:
        os.close(write_fd)
    assert left == [True]


async def test_lines_holding_an_integer_too_long_to_convert_are_answered_here() -> None:
    digits = "9" * 5000

    async def lines() -> AsyncIterator[str]:
        for line in ('{"jsonrpc": "2.0", "id": "a", "method": "ping", "params": {"n": %s}}\n' % digits,
                     '{"jsonrpc": "2.0", "id": %s, "method": "ping"}\n' % digits,
                     '{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"p": %s}}\n' % digits,
                     "\n", "  \t\r\n",  # blank lines hold no message: dropped, not answered
                     _request(3) + "\n",
                     # as many digits inside a string (ASCII or not) are text, not a number
                     '{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"s": "%s"}}\n' % digits,
                     '{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"s": "%s"}}\n' % ("\u0663" * 5000)):
            yield line

    replies: list[SessionMessage] = []

    async def reply(message: SessionMessage) -> None:
        replies.append(message)

    screened = ScreenedLines(lines(), max_containers=20_000)
    screened.reply = reply
    assert [json.loads(line)["id"] async for line in screened] == [3, 4, 5]  # the ordinary lines reach the SDK
    errors = [message.message for message in replies]
    assert [(e.id, e.error.code) for e in errors if isinstance(e, types.JSONRPCError)] == [
        ("a", types.INVALID_REQUEST), (None, types.PARSE_ERROR)]
