"""The suite byte-compiles the checkout before it starts (tests/conftest.py): the processes its tests start read
current bytecode instead of compiling every module again (PYTHONDONTWRITEBYTECODE stops imports from writing it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import lazytools

_PACKAGE = Path(lazytools.__file__).resolve().parent


def _stale(source: Path) -> bool:
    cached = Path(importlib.util.cache_from_source(str(source)))
    if not cached.exists():
        return True
    header = cached.read_bytes()[:16]
    # PEP 552 timestamp form: flags 0, then the source's mtime and size as the compiler saw them.
    stat = source.stat()
    return (int.from_bytes(header[4:8], "little") != 0
            or int.from_bytes(header[8:12], "little") != int(stat.st_mtime) & 0xFFFFFFFF
            or int.from_bytes(header[12:16], "little") != stat.st_size & 0xFFFFFFFF)


def test_every_module_of_the_package_has_current_bytecode() -> None:
    sources = sorted(_PACKAGE.rglob("*.py"))
    assert len(sources) > 100
    stale = [str(source.relative_to(_PACKAGE)) for source in sources if _stale(source)]
    assert stale == []
