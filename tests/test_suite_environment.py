"""What tests/conftest.py gives every test process: no proxy between a test and its loopback servers, and a cache
folder of the run's own, so that no test reads or writes the developer's."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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
