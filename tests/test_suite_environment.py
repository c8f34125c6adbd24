"""What tests/conftest.py gives every test process: no proxy between a test and its loopback servers, a cache
folder of the run's own, so that no test reads or writes the developer's, and no child process from a test that is
not marked `process` (the fast set must stay without them)."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import _PROXY_VARIABLES, make_settings


def test_no_proxy_variable_reaches_a_test_or_its_children() -> None:
    proxies = [name for name in os.environ if name.lower() in _PROXY_VARIABLES]
    assert proxies == []


def test_lazytools_keeps_what_it_learns_in_the_runs_own_cache_folder() -> None:
    folder = make_settings().embedding_cache_dir()  # the usage store and the vector cache live here
    home_cache = Path.home() / ".cache"
    assert folder.parent == Path(os.environ["XDG_CACHE_HOME"])
    assert folder.parent.is_dir() and folder.parent.is_relative_to(tempfile.gettempdir())
    assert not folder.is_relative_to(home_cache)


def _fork() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)  # reached only if the guard let the fork through: the copy of the test process leaves at once
    os.waitpid(pid, 0)


_WAYS_TO_START_A_PROCESS: dict[str, Callable[[], object]] = {
    "subprocess.run": lambda: subprocess.run([sys.executable, "-c", "pass"], check=False),
    "os.system": lambda: os.system("true"),
    "os.popen": lambda: os.popen("true"),
    "os.posix_spawn": lambda: os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], {}),
    "os.spawnv": lambda: os.spawnv(os.P_WAIT, sys.executable, [sys.executable, "-c", "pass"]),
    "os.fork": lambda: _fork(),
    "multiprocessing, spawn": lambda: multiprocessing.get_context("spawn").Process(target=print).start(),
    "multiprocessing, fork": lambda: multiprocessing.get_context("fork").Process(target=print).start(),
}


@pytest.mark.parametrize("start", list(_WAYS_TO_START_A_PROCESS.values()), ids=list(_WAYS_TO_START_A_PROCESS))
def test_a_test_not_marked_process_cannot_start_one(start: Callable[[], object]) -> None:
    with pytest.raises(AssertionError, match="starts a process: mark it @pytest.mark.process"):
        start()
