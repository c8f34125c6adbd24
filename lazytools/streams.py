"""A read stream that is watched: each message passes a hook on its way in, and the stream's end is reported.

The gateway watches each upstream's read stream (its end is how a crashed stdio server is noticed without a
request in flight; each message is screened before the SDK reads it); the stdio transport watches the client's
(each request is counted until answered, and the end waits for the answers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import anyio

__all__ = ["WatchedReadStream"]

T = TypeVar("T")


async def _nothing() -> None:
    return None


class WatchedReadStream(Generic[T]):
    """`inner`, with `on_item` applied to each message received and `on_end` awaited when a receive finds one of
    `ends` (then the error goes on); every other attribute (`last_context`, which the SDK reads) is `inner`'s."""

    def __init__(self, inner: Any, *, on_item: Callable[[T], T] = lambda item: item,
                 on_end: Callable[[], Awaitable[None]] = _nothing,
                 ends: tuple[type[BaseException], ...] = (anyio.EndOfStream,)) -> None:
        self._inner = inner
        self._on_item = on_item
        self._on_end = on_end
        self._ends = ends

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def receive(self) -> T:
        try:
            item = await self._inner.receive()
        except self._ends:
            await self._on_end()
            raise
        return self._on_item(item)

    def __aiter__(self) -> WatchedReadStream[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedReadStream[T]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
