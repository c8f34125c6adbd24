"""Every bundled tool, called through the server's real wrapper, on hostile inputs at the caps: each call returns a
result within the size limit that is strict JSON and valid UTF-8, or fails with a clear tool error; none hangs.

The tool list comes from the catalog, so a new tool is covered without editing this file. Speed is measured by
benchmarks/adversarial_tools.py; here a call only fails for time if it has not finished after a generous wait
(a hang or a blow-up, not a slow machine).
"""

from __future__ import annotations

import concurrent.futures
import json
import queue
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, get_type_hints

import anyio
import mcp_types as types
import pytest
from anyio.from_thread import BlockingPortal
from lazytools_examples._common import MAX_RESULT_BYTES

from lazytools.catalog import ToolEntry
from lazytools.errors import ToolArgumentsError, ToolExecutionError
from lazytools.sources.functions import function_tool

from .adversarial_inputs import adversarial_calls, make_adversarial_root, tool_functions

HANG_SECONDS = 300.0  # a hang, not a slow call on a machine at load 25
# What a clear tool error is: the tool's own ValueError (or the argument validation before it), not an exception
# that escaped from deep inside (RecursionError, MemoryError, UnicodeEncodeError, OverflowError, TypeError…).
CLEAR = (ValueError,)
UNCLEAR = (UnicodeError, RecursionError, MemoryError)

_ROOT = Path(__file__).parent  # only to list the tool names at collection time; calls use a scratch root
TOOL_NAMES = sorted(tool_functions(_ROOT))


@pytest.fixture(scope="module")
def files_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_adversarial_root(tmp_path_factory.mktemp("adversarial") / "root")


@cache
def _functions(root: Path) -> dict[str, Callable[..., Any]]:
    return tool_functions(root)


@cache
def _entry(name: str, root: Path) -> ToolEntry:
    """The tool's wrapper, made once as the server makes it once and calls it for every request (made again for
    each of the ~8,400 calls, it and the tool functions cost ~68 s of CPU, half the file's)."""
    return function_tool(_functions(root)[name], group="examples")


class _Loop:
    """One event loop in a daemon thread that runs a test's calls one after the other, as a server's loop runs
    requests (a new loop and worker thread for each of the ~7,300 calls cost more than most of the calls).
    A call that never ends leaves the thread stuck, and the test reports the hang: the thread is a daemon."""

    def __init__(self) -> None:
        ready: queue.Queue[BlockingPortal] = queue.Queue()

        async def serve() -> None:
            async with BlockingPortal() as portal:
                ready.put(portal)
                await portal.sleep_until_stopped()

        threading.Thread(target=anyio.run, args=(serve,), daemon=True, name="adversarial-loop").start()
        self.portal = ready.get()
        self.stuck = False

    def call(self, name: str, root: Path, arguments: dict[str, Any]) -> tuple[str, Any, int]:
        """Run one call the way the server does (validation, worker thread, result conversion)."""
        future = self.portal.start_task_soon(_entry(name, root).call, arguments)
        try:
            result = future.result(HANG_SECONDS)
        except concurrent.futures.TimeoutError:
            self.stuck = True
            return "hang", None, 0
        except BaseException as exc:  # noqa: BLE001 - classified by the test
            return "error", exc, 0
        sent = result.model_dump_json(by_alias=True, exclude_none=True)  # what goes on the wire
        return "result", result, len(sent.encode("utf-8"))

    def close(self) -> None:
        if not self.stuck:
            self.portal.call(self.portal.stop)


def _check(name: str, label: str, outcome: str, value: Any, sent: int = 0, returns_text: bool = False) -> str | None:
    """None if the outcome is acceptable, else what is wrong."""
    where = f"{name}({label})"
    if outcome == "hang":
        return f"{where} did not finish within {HANG_SECONDS:g}s"
    if outcome == "error":
        if isinstance(value, ToolArgumentsError):
            return None
        cause = value.__cause__ if isinstance(value, ToolExecutionError) else value
        if isinstance(cause, CLEAR) and not isinstance(cause, UNCLEAR):
            return None
        return f"{where} failed unclearly: {type(cause).__name__}: {str(cause)[:200]}"
    result: types.CallToolResult = value
    text = result.content[0].text if result.content and isinstance(result.content[0], types.TextContent) else ""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return f"{where} returned text that is not valid UTF-8 (a lone surrogate)"
    if size > MAX_RESULT_BYTES:
        return f"{where} returned {size:,} bytes, over the {MAX_RESULT_BYTES:,}-byte limit"
    if sent > MAX_RESULT_BYTES:
        return f"{where} made a message of {sent:,} bytes, over the {MAX_RESULT_BYTES:,}-byte limit"
    if not returns_text:
        try:
            json.loads(text, parse_constant=_refuse)
        except ValueError as exc:
            return f"{where} returned text that is not strict JSON: {str(exc)[:100]}"
    return None


def _refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


# The regex tools (and search_in_files with regex=true) run each match in a child interpreter: `process`.
_IN_A_CHILD = {name for name in TOOL_NAMES if name.startswith("regex_") and name not in ("regex_escape",
                                                                                          "regex_validate",
                                                                                          "regex_explain_flags")}
_IN_A_CHILD.add("search_in_files")


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.process) if name in _IN_A_CHILD else name
                                  for name in TOOL_NAMES])
def test_tool_survives_hostile_input(name: str, files_root: Path) -> None:
    problems: list[str] = []
    outcomes = {"result": 0, "error": 0}
    returns_text = get_type_hints(_functions(files_root)[name]).get("return") is str
    loop = _Loop()
    try:
        for label, arguments in adversarial_calls(name, files_root):
            outcome, value, sent = loop.call(name, files_root, arguments)
            problem = _check(name, label, outcome, value, sent, returns_text)
            if problem:
                problems.append(problem)
                if outcome == "hang":
                    break
            elif outcome in outcomes:
                outcomes[outcome] += 1
    finally:
        loop.close()
    assert problems == []
    assert outcomes["result"] >= 1, f"{name}: not even the baseline call succeeded"


def test_every_catalog_tool_is_covered(files_root: Path) -> None:
    # The parametrisation above is the catalog's own list, and every tool's baseline call is a valid one.
    assert sorted(tool_functions(files_root)) == TOOL_NAMES
    for name in TOOL_NAMES:
        label, arguments = next(iter(adversarial_calls(name, files_root)))
        assert label == "baseline" and isinstance(arguments, dict), name
