"""What an upstream hears when lazytools cannot pass its request to a client: why, and a remedy only where it helps."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from lazytools.origin import ClientSide
from lazytools.sources.gateway.relay import Inflight, Relay


@dataclass
class _Session:
    key: str
    capabilities: types.ClientCapabilities | None = None

    def wants_log(self, level: types.LoggingLevel) -> bool:
        return True

    async def notify(self, notification: types.ServerNotification) -> None:
        raise AssertionError("nothing is sent")

    async def request(self, request: types.ServerRequest, result_type: type[Any]) -> Any:
        raise AssertionError("nothing is asked")


class _Sessions:
    def __init__(self, *sessions: ClientSide) -> None:
        self.sessions = {session.key: session for session in sessions}

    def __iter__(self) -> Iterator[ClientSide]:
        return iter(self.sessions.values())

    def get(self, key: str) -> ClientSide | None:
        return self.sessions.get(key)


async def _ask_roots(relay: Relay) -> str:
    answer = await relay.ask("fs", Inflight(), None, types.ListRootsRequest(), types.ListRootsResult)
    assert isinstance(answer, types.ErrorData)
    return answer.message


async def test_a_request_before_any_client_connects_suggests_no_per_session_scope() -> None:
    """On stdio a server asking for roots at start-up comes before the one client: `"scope": "session"` would
    change nothing there, so it is not suggested."""
    message = await _ask_roots(Relay())
    assert "no client connected" in message and "scope" not in message


async def test_with_several_sessions_connected_the_per_session_scope_is_suggested() -> None:
    relay = Relay()
    relay.clients = _Sessions(_Session("a" * 32), _Session("b" * 32))
    message = await _ask_roots(relay)
    assert "several client sessions are connected" in message and '"scope": "session"' in message


@dataclass
class _Listener:
    key: str
    heard: list[types.ServerNotification]
    release: Any = None
    """An anyio Event the session waits on before taking each message (a client that is not reading)."""
    capabilities: types.ClientCapabilities | None = None

    def wants_log(self, level: types.LoggingLevel) -> bool:
        return True

    async def notify(self, notification: types.ServerNotification) -> None:
        if self.release is not None:
            await self.release.wait()
        self.heard.append(notification)

    async def request(self, request: types.ServerRequest, result_type: type[Any]) -> Any:
        raise AssertionError("nothing is asked")


async def test_a_client_that_is_not_reading_holds_a_bounded_number_of_log_messages() -> None:
    import anyio

    from lazytools.sources.gateway.bounds import MAX_PENDING_LOGS

    stalled = _Listener("s" * 32, [], anyio.Event())
    reading = _Listener("r" * 32, [])
    relay = Relay()
    relay.clients = _Sessions(stalled, reading)

    def message(number: int) -> types.LoggingMessageNotificationParams:
        return types.LoggingMessageNotificationParams(level="info", data=f"line {number}")

    async with anyio.create_task_group() as tasks:
        for number in range(500):  # each in a task of its own, as the SDK hands them on
            tasks.start_soon(relay.log, "chatty", Inflight(), None, message(number))
        await anyio.wait_all_tasks_blocked()
        assert relay.logs.waiting(stalled.key) == MAX_PENDING_LOGS
        # The session that reads has heard all but the messages waiting on the stalled one, which then come on.
        assert len(reading.heard) == 500 - MAX_PENDING_LOGS
        stalled.release.set()
    assert len(stalled.heard) == MAX_PENDING_LOGS and len(reading.heard) == 500
    await relay.log("chatty", Inflight(), None, message(500))
    warning, last = stalled.heard[-2:]
    assert isinstance(warning, types.LoggingMessageNotification) and warning.params.level == "warning"
    assert f"{500 - MAX_PENDING_LOGS} log messages" in str(warning.params.data) and "not reading" in str(warning.params.data)
    assert isinstance(last, types.LoggingMessageNotification) and last.params.data == "line 500"
    assert relay.logs.waiting(stalled.key) == 0
