"""After a large request on a session, its dispatcher is handed a message that weighs nothing, so it lets go.

The SDK's dispatcher reads a session's messages in a loop whose variable holds the last one received (the parsed
request, the HTTP request with its body, the sender's context) until the next arrives, and a client need never send
one: a session that sent one request of a few MB and then went quiet held that much until it idled out. Once such a
request is answered, a notification with no handler (the SDK drops it at debug level) takes its place in the loop.
"""

from __future__ import annotations

import logging

import anyio
import mcp_types as types
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.message import SessionMessage

from .http_shared_sessions import SharedSessionManager

__all__ = ["RELEASE_AFTER_BYTES", "RELEASE_METHOD", "let_go"]

logger = logging.getLogger(__name__)

RELEASE_AFTER_BYTES = 64 * 1024
"""Bodies below this cost a session less than its own state: not worth a message."""
RELEASE_METHOD = "notifications/lazytools/release"
_RELEASE_WAIT = 1.0
"""How long to wait for a busy dispatcher to take the message: it only ever waits on its own next read."""


async def let_go(manager: StreamableHTTPSessionManager | SharedSessionManager, session_id: str) -> None:
    """Hand the session `session_id` of `manager` a message of no weight (no-op for a session this process does
    not hold, or one that has ended)."""
    if isinstance(manager, SharedSessionManager):
        transport = manager.transport_of(session_id)
    else:  # the SDK's manager keeps its open sessions by id
        transport = manager._server_instances.get(session_id)
    writer = getattr(transport, "_read_stream_writer", None)
    if writer is None:
        return
    try:
        with anyio.move_on_after(_RELEASE_WAIT):
            await writer.send(SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method=RELEASE_METHOD)))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        logger.debug("session ended before its last request could be let go")
