"""What tests/conftest.py gives every test process: no proxy between a test and its loopback servers, a cache
folder of the run's own, so that no test reads or writes the developer's, and no child process from a test that is
not marked `process` (the fast set must stay without them)."""

from __future__ import annotations

import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import _PROXY_VARIABLES, make_settings
from .process_guard import GUARD


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
    "multiprocessing, forkserver": lambda: multiprocessing.get_context("forkserver").Process(target=print).start(),
}


@pytest.mark.parametrize("start", list(_WAYS_TO_START_A_PROCESS.values()), ids=list(_WAYS_TO_START_A_PROCESS))
def test_a_test_not_marked_process_cannot_start_one(start: Callable[[], object]) -> None:
    with GUARD.expect_refusal() as refused:
        start()
    assert re.fullmatch(r".+ starts a process \(.+\): mark it @pytest.mark.process", refused[0])


_HIDDEN_STARTS = '''
import subprocess, sys
import pytest

def start():
    subprocess.run([sys.executable, "-c", "pass"], check=False)

def test_a_caught_refusal():
    try:
        start()  # an upstream's start that turns every error into a state, as the gateway does
    except Exception:
        pass

@pytest.fixture(scope="module")
def server():
    start()

def test_a_module_fixture(server):
    pass

@pytest.mark.process
def test_marked():
    start()
'''


@pytest.mark.process  # the suite's guard runs in a pytest of its own, in a child process
def test_a_process_start_is_refused_where_code_catches_it_and_in_module_fixtures(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    process: starts a child process\n")
    (tmp_path / "test_hidden.py").write_text(_HIDDEN_STARTS)
    (tmp_path / "test_at_import.py").write_text("import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'])\n"
                                                "def test_nothing():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.process_guard", "-p", "no:cacheprovider",
                          "-p", "no:xdist", "-q", "--continue-on-collection-errors"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    out = run.stdout
    assert re.search(r"1 failed, 1 passed, 2 errors", out), out
    assert "test_hidden.py::test_a_caught_refusal starts a process" in out  # failed, though the code caught it
    assert "test_hidden.py::test_a_module_fixture starts a process" in out  # an error in the fixture's setup
    assert "collection (a test module's own code) starts a process" in out
