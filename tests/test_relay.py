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
