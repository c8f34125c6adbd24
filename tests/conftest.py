"""Shared fixtures: a small catalog of real in-process tools, settings that ignore the user's .env, clients."""

from __future__ import annotations

import compileall
import gc
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import anyio.to_thread
import mcp_types as types
import pytest
from mcp import Client
from pydantic import Field

from lazytools import Catalog, FunctionGroup, Group, LazyServer, Settings, ToolEntry, build_server
from lazytools.search import LiveIndex, SearchIndex

from . import process_guard
from .process_guard import pytest_collection, pytest_runtest_call, pytest_runtest_setup, pytest_runtest_teardown

__all__ = ["pytest_collection", "pytest_runtest_call", "pytest_runtest_setup", "pytest_runtest_teardown"]

_ROOT = Path(__file__).resolve().parent.parent
# What the suite's child processes import from this checkout (pip compiled everything installed from an index).
_SOURCES = ("lazytools", "examples", "benchmarks", "tests")
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
VECTOR_CACHE = _ROOT / ".cache" / "test-vectors"
"""Where the quality tests keep the vectors of the fixed catalogs they embed, between runs as lazytools keeps a
user's: keyed by the text and the embedder's fingerprint, so a changed tool or model is embedded again. The
multi-server dev catalog's 654 tools took 11.5 s of CPU to embed at every run."""


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as at a terminal for every child, and none of the developer's LAZYTOOLS_* variables; then byte-compile
    the checkout once, in the process that starts the others (xdist's controller, or the only one).

    With PYTHONDONTWRITEBYTECODE set (as on the machine CI runs on) no import writes a .pyc, so every lazytools or
    upstream process a test starts compiled the ~150 modules it imports again (`import lazytools.app` took 1.79 s
    of CPU without them, 1.70 s with them), hundreds of times a run. compileall writes them whatever that variable says; reading them was never turned off. Files that
    are current are skipped, so a second run costs a few stat calls."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started in the background by a shell without job control (`cmd &` in a script, nohup): SIGINT is ignored
        # and every child would inherit that, so the tests that press Ctrl-C on lazytools would see it ignored.
        # A handler here resets to the default in each child, as at a terminal.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # The tests choose every setting they depend on (`make_settings`, or the environment a child is given): a
    # developer's own LAZYTOOLS_* variables (a mode, a search limit) must not change what they see.
    for variable in [name for name in os.environ if name.startswith("LAZYTOOLS_")]:
        del os.environ[variable]
    # Every server a test talks to is on loopback: a developer's HTTP(S)_PROXY sent those requests to the proxy
    # (one test hung for good, dozens failed with a bare ConnectError).
    for variable in [name for name in os.environ if name.lower() in _PROXY_VARIABLES]:
        del os.environ[variable]
    # pytest caches each test module's assertion-rewritten code beside it, unless bytecode writing is off: then
    # every worker rewrote all ~120 test modules at every start (14 s of CPU to collect the fast set, 6.8 s with
    # the cache). The cache is pytest's own, written atomically, keyed by the source; a read-only checkout skips it.
    sys.dont_write_bytecode = False
    process_guard.pytest_configure(config)  # a test that starts a process must be marked `process`
    if hasattr(config, "workerinput"):
        return
    # What lazytools keeps between runs (the usage store it learns from, cached tool vectors) goes to a folder of
    # this run's, which every worker and child inherits: a test's searches never reach the developer's own store.
    cache = Path(tempfile.mkdtemp(prefix="lazytools-test-cache-"))
    config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
    os.environ["XDG_CACHE_HOME"] = str(cache)
    for name in _SOURCES:
        compileall.compile_dir(_ROOT / name, quiet=2, rx=re.compile(r"node_modules"), workers=1)


WORKERS_PER_CORE = 2
"""`-n auto` starts this many workers per core. A test spends much of its time waiting on what it started (a
lazytools child process coming up, an upstream, Redis, haproxy, a round trip on loopback), so one worker per core
left cores idle: on the 2-core machine CI runs on, with one other busy process, the whole suite took 13:12 with
three workers and 11:50 with four, against 12:51 for two on the quiet machine (docs/testing.md, round 7)."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """xdist's `-n auto`: WORKERS_PER_CORE per core this process may run on (`-n N` still sets N)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return WORKERS_PER_CORE * cores


def make_settings(**overrides: Any) -> Settings:
    return Settings(_env_file=None, **overrides)  # type: ignore[call-arg]


def small_catalog() -> Catalog:
    weather = FunctionGroup("weather", summary="Forecasts and conditions for a city.")

    @weather.tool
    def get_forecast(city: Annotated[str, Field(description="City name")], days: int = 3) -> dict[str, Any]:
        """Get the weather forecast for a city for the next days."""
        return {"city": city, "days": days, "forecast": ["sunny"] * days}

    @weather.tool
    def get_alerts(region: str) -> str:
        """Get active severe weather alerts for a region."""
        return f"no alerts for {region}"

    text = FunctionGroup("text", summary="Text utilities.")

    @text.tool
    def word_count(text: str) -> int:
        """Count the words in a text."""
        return len(text.split())

    @text.tool
    def reverse_text(text: str) -> str:
        """Reverse a text, character by character."""
        return text[::-1]

    @text.tool
    def explode(message: str) -> str:
        """Always fails, to test error results."""
        raise RuntimeError(f"boom: {message}")

    issues = FunctionGroup("tracker", summary="Issue tracker.")

    @issues.tool
    def create_issue(title: str, body: str = "") -> dict[str, Any]:
        """Create a new issue in the tracker with a title and body."""
        return {"created": title, "body": body}

    @issues.tool
    def list_issues(state: str = "open") -> list[str]:
        """List issues in the tracker, filtered by state."""
        return [f"{state} issue"]

    catalog = Catalog()
    for group in (weather, text, issues):
        catalog.set_group(Group(group.group, group.summary), group.entries)
    return catalog


@pytest.fixture(autouse=True)
def _learning_stays_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Learning from use is on by default and writes to the user's cache directory: tests that want it turn it on
    with a directory of their own (`learn=True, cache_dir=tmp_path`); child processes inherit this."""
    monkeypatch.setenv("LAZYTOOLS_LEARN", "false")


@pytest.fixture(autouse=True, scope="module")
def _leaks_fail_their_own_module() -> Iterator[None]:
    """A socket, file or process left unclosed in a reference cycle warns (ResourceWarning, an error here) when the
    garbage collector frees it, which was whenever it next ran: in some later test. Collecting at the end of each
    module makes the warning fail that module's last test, on every run."""
    yield
    gc.collect()


@pytest.fixture
def catalog() -> Catalog:
    return small_catalog()


@pytest.fixture
def server_factory() -> Callable[..., LazyServer]:
    def factory(**overrides: Any) -> LazyServer:
        return build_server(small_catalog(), make_settings(**overrides))

    return factory


class Recorder:
    """Collects what the server sends besides responses, with the order it arrived in."""

    def __init__(self) -> None:
        self.events: list[str] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.events.append("list_changed")

    def mark(self, event: str) -> None:
        self.events.append(event)


def client(server: LazyServer, name: str = "Visual Studio Code", *, recorder: Recorder | None = None,
           mode: str = "legacy") -> Client:
    return Client(server, mode=mode, client_info=types.Implementation(name=name, version="1.0"),
                  message_handler=recorder)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def embedded(live: LiveIndex) -> SearchIndex:
    """The live index once its background embedding is over (done, or failed: then it stays BM25)."""
    index = await live.ready()
    if live.background is not None:
        await anyio.to_thread.run_sync(live.background.done.wait)
    return index


_LISTED = re.compile(r"^- ([^\s(\[]+)", re.MULTILINE)


async def searched(entries: Sequence[ToolEntry], query: str, **overrides: Any) -> list[str]:
    """The tools `search_tools` lists for `query` (enabled, then the others), in order, asked over a real client
    of a server of `entries` (one group per entry's group)."""
    catalog = Catalog()
    for group in dict.fromkeys(entry.group for entry in entries):
        catalog.set_group(Group(group), [entry for entry in entries if entry.group == group])
    async with client(build_server(catalog, make_settings(**overrides))) as c:
        return _LISTED.findall(text_of(await c.call_tool("search_tools", {"query": query})))
