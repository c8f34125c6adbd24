"""The layout map (docs/layout.md, which the README points to) names paths that exist, and names every module and
folder of the package."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _mapped() -> list[Path]:
    """Every path the map names: a line's words before its description (two spaces or more), below its folder;
    a line that starts with a folder (`embedders/ base.py cache.py`) names files of that folder."""
    layout = (ROOT / "docs" / "layout.md").read_text()
    block = re.search(r"# Layout\n.*?```\n(.*?)```", layout, flags=re.S)
    assert block is not None, "docs/layout.md has no map"
    paths: list[Path] = []
    folders: list[tuple[int, Path]] = []  # (indent, folder) of the lines above
    for line in block.group(1).splitlines():
        indent = len(line) - len(line.lstrip())
        names = re.split(r"\s{2,}", line.strip())[0].split()
        while folders and folders[-1][0] >= indent:
            folders.pop()
        parent = folders[-1][1] if folders else ROOT
        if names and names[0].endswith("/"):  # "folder/ a.py b.py": the folder, then files of it
            folder = parent / names[0]
            paths += [folder, *(folder / name for name in names[1:])]
            folders.append((indent, folder))
        else:
            paths += [parent / name for name in names]
    return paths


def test_every_mapped_path_exists() -> None:
    paths = _mapped()
    assert len(paths) > 20
    missing = [str(path.relative_to(ROOT)) for path in paths if not path.exists()]
    assert not missing, missing


def test_every_package_folder_is_mapped() -> None:
    mapped = {path.resolve() for path in _mapped()}
    folders = {init.parent.resolve() for init in (ROOT / "lazytools").rglob("__init__.py")}
    unmapped = sorted(str(folder.relative_to(ROOT)) for folder in folders - mapped
                      if not any(parent in mapped for parent in folder.parents if parent != ROOT / "lazytools"))
    # A folder counts as mapped when it or its parent below lazytools/ is (search/'s own folders need no line).
    assert not unmapped, unmapped


def _unmapped_modules(mapped: set[Path]) -> list[str]:
    """Modules of lazytools/ the map does not name (a package's `__init__.py` is named by its folder)."""
    modules = [path for path in sorted((ROOT / "lazytools").rglob("*.py")) if path.name != "__init__.py"]
    return [str(path.relative_to(ROOT)) for path in modules if path.resolve() not in mapped]


def test_every_module_is_mapped() -> None:
    assert _unmapped_modules({path.resolve() for path in _mapped()}) == []


def test_a_module_missing_from_the_map_is_named() -> None:
    mapped = {path.resolve() for path in _mapped()}
    http_guard = (ROOT / "lazytools" / "transports" / "http_guard.py").resolve()
    assert _unmapped_modules(mapped - {http_guard}) == ["lazytools/transports/http_guard.py"]


LONGEST_CLASS = 300
"""Lines a class of the package may span: past it, a second job hides in it. `Settings` is data, and exempt."""


def _classes() -> list[tuple[int, str]]:
    import ast

    found = []
    for path in sorted((ROOT / "lazytools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                found.append((node.end_lineno - node.lineno + 1, f"{path.relative_to(ROOT)}:{node.name}"))
    return found


def test_no_class_is_longer_than_300_lines() -> None:
    classes = _classes()
    assert len(classes) > 50
    long = [f"{where} ({lines} lines)" for lines, where in classes
            if lines > LONGEST_CLASS and where != "lazytools/settings.py:Settings"]
    assert not long, long


def test_the_wiring_builds_none_of_its_parts() -> None:
    """`LazyServer` receives what it is made of (server/parts.py) from the assembly root (app.py): its module calls
    none of the constructors of those parts."""
    import ast

    parts = {"Gate", "PassThrough", "LiveIndex", "MemorySessionStore", "SessionRegistry", "LocalSubscriptionBus",
             "Metrics", "MemoryRateLimiter", "PolicyFile", "open_usage", "SessionClients", "PrincipalMiddleware",
             "AccessMiddleware", "MetricsMiddleware", "AuditMiddleware", "RateLimitMiddleware", "OriginMiddleware"}
    tree = ast.parse((ROOT / "lazytools" / "server" / "core.py").read_text())
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert "LazyServer" in (ROOT / "lazytools" / "server" / "core.py").read_text()
    assert not called & parts, sorted(called & parts)
