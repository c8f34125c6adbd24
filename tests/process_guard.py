"""A test that starts a child process must be marked `process`, so `pytest -m "not process"` stays fast.

A pytest plugin (the suite's conftest takes its hooks; `-p tests.process_guard` loads it alone). The ways of starting
a process are wrapped once per test process, and each phase says whether one may start: a test's setup (its
fixtures of every scope, set up for it) and its call only when the test is marked; collection never; teardown
always (a session fixture is finalized after whichever test ran last). Popen (subprocess, anyio.open_process, the
SDK's stdio client) and multiprocessing's spawn and forkserver end in `_posixsubprocess.fork_exec`; os.system,
posix_spawn and fork start one without it; a multiprocessing Process may also be started by a forkserver that is
already running, so `Process.start` is refused too.

A refusal raises AssertionError where the process was asked for, and is also kept: code under test that catches
every exception (an upstream's start, a retry loop) cannot hide it, since the test fails at the end of the phase
with what was refused. Not covered: a process started through ctypes' libc calls."""

from __future__ import annotations

import _posixsubprocess
import multiprocessing.process
import os
import subprocess
import threading
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any

import pytest

__all__ = ["GUARD", "ProcessGuard", "pytest_collection", "pytest_configure", "pytest_runtest_call",
           "pytest_runtest_setup", "pytest_runtest_teardown"]

OS_STARTERS = ("system", "posix_spawn", "posix_spawnp", "fork", "forkpty", "execv", "execve")
"""os's ways of starting (or becoming) another program that do not go through `_posixsubprocess.fork_exec`
(os.spawn* and os.popen call fork or Popen)."""


class ProcessGuard:
    """Whether the running phase may start a process, and the refusals it made."""

    def __init__(self) -> None:
        self.installed = False
        self.allowed = True
        self.test = "collection"
        self.refused: list[str] = []

    def install(self) -> None:
        """Wrap every way of starting a process (once per process)."""
        if self.installed:
            return
        self.installed = True
        subprocess.Popen.__init__ = self._guarded(subprocess.Popen.__init__, "subprocess.Popen")  # type: ignore[method-assign]
        _posixsubprocess.fork_exec = self._guarded(_posixsubprocess.fork_exec, "fork_exec")
        process = multiprocessing.process.BaseProcess
        process.start = self._guarded(process.start, "multiprocessing Process.start")  # type: ignore[method-assign]
        for name in OS_STARTERS:
            if hasattr(os, name):
                setattr(os, name, self._guarded(getattr(os, name), f"os.{name}"))

    def phase(self, test: str, *, allowed: bool) -> None:
        self.test, self.allowed, self.refused = test, allowed, []

    def check(self, what: str) -> None:
        if self.allowed:
            return
        message = f"{self.test} starts a process ({what}): mark it @pytest.mark.process"
        if threading.current_thread() is not threading.main_thread():
            message += f" (asked from thread {threading.current_thread().name!r}, which an earlier test may have left)"
        self.refused.append(message)
        raise AssertionError(message)

    def raise_refusals(self) -> None:
        """Fail the phase if a refusal was made in it, even one the code under test caught."""
        if self.refused:
            refused, self.refused = self.refused, []
            raise AssertionError("\n".join(dict.fromkeys(refused)))

    @contextmanager
    def expect_refusal(self) -> Iterator[list[str]]:
        """For a test of the guard itself: what runs inside must be refused (the list it gives is filled with the
        refusals' messages), and those refusals are not held against the test."""
        before, made = len(self.refused), list[str]()
        try:
            yield made
        except AssertionError:
            pass
        made += self.refused[before:]
        if not made:
            raise AssertionError("no process start was refused")
        del self.refused[before:]

    def _guarded(self, start: Callable[..., Any], what: str) -> Callable[..., Any]:
        @wraps(start)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            self.check(what)
            return start(*args, **kwargs)

        return guarded


GUARD = ProcessGuard()


def pytest_configure(config: pytest.Config) -> None:
    """Installed where tests run: a worker, or the only process; xdist's controller starts its workers itself."""
    controller = not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))
    if not controller:
        GUARD.install()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    GUARD.phase("collection (a test module's own code)", allowed=False)
    try:
        result = yield
    finally:
        GUARD.phase("between tests", allowed=True)
    return result


def _marked(item: pytest.Item) -> bool:
    return item.get_closest_marker("process") is not None


def _guarded_phase(item: pytest.Item) -> Generator[None, object, object]:
    """A test's setup or call: a process may start only for a marked test, and a refusal fails the phase."""
    GUARD.phase(item.nodeid, allowed=_marked(item))
    result = yield
    GUARD.raise_refusals()
    return result


pytest_runtest_setup = pytest_runtest_call = pytest.hookimpl(wrapper=True)(_guarded_phase)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    GUARD.phase(item.nodeid, allowed=True)
    return (yield)
