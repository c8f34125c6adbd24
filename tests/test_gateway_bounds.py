"""Bounds on what an upstream's notifications make the gateway hold (lazytools/sources/gateway/bounds.py)."""

from __future__ import annotations

import anyio

from lazytools.sources.gateway.bounds import MAX_NOTE_CHARS, ProgressGate, clip_text

from .helpers import eventually


def test_clip_text_keeps_short_text_and_says_how_long_long_text_was() -> None:
    assert clip_text("short") == "short"
    clipped = clip_text("z" * (MAX_NOTE_CHARS * 3))
    assert clipped.startswith("z" * MAX_NOTE_CHARS) and clipped.endswith(f"cut from {MAX_NOTE_CHARS * 3} characters]")


async def test_progress_waiting_for_a_client_that_does_not_read_is_bounded() -> None:
    release = anyio.Event()
    sent: list[str | None] = []

    async def send(progress: float, total: float | None, message: str | None) -> None:
        await release.wait()
        sent.append(message)

    gate = ProgressGate(send, limit=4)
    async with anyio.create_task_group() as tg:
        for n in range(10):
            tg.start_soon(gate, float(n), None, f"p{n}")
        await eventually(lambda: gate.waiting == 4 and gate.dropped == 6)
        release.set()
    assert sorted(m or "" for m in sent) == ["p0", "p1", "p2", "p3"]
    await gate(10.0, None, "p10")
    assert sent[-1] == "p10 [lazytools: 6 progress notifications dropped: the client was not reading]"
