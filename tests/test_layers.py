"""Imports go one way: a module imports only modules of its own layer or lower ones (the table `LAYERS`).

From the bottom up: what everything shares (errors, settings, names, entries, the SDK adapter) → tokens and
validation → the catalog → sources → search and the manifest → the server's sessions → its meta-tools → the
server's wiring → transports → the assembly root and reports → the command line. Each folder is one concept
(`sources/`, `search/`, `server/`, `transports/`); modules inside a folder have their own layers where they differ.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import lazytools

PACKAGE = Path(lazytools.__file__).resolve().parent

# Lower numbers are lower layers. A module may import only modules of its own layer or lower ones. A module's layer
# is that of the longest key that is its name or a package above it ("sources.gateway.upstream" → "sources").
LAYERS: dict[str, int] = {
    # what everything shares: errors, settings, the tool-name policy, the private-SDK adapter, the surfaces' names
    "errors": 0, "settings": 0, "toolnames": 0, "entry": 0, "sdk": 0, "modes": 0,
    "safetext": 0, "threads": 0, "heap": 0, "origin": 0, "streams": 0, "uris": 0, "parts": 0,  # origin: whose request is served, read by server and gateway
    "identity": 0,  # identity: who a request acts for (a Principal)
    "smallfiles": 0,  # files a user names (config, env file), read within bounds
    "schematitles": 0,  # titles in a schema that restate a name, left out of what is listed
    "textwords": 0,  # the words of a text and their stems (the catalog's name suggestions, search)
    "jsonshape": 0,  # how many arrays and objects a JSON text holds, counted before any parser reads it
    "logsink": 0,  # log lines written to stderr by a thread: a stderr no one reads never stops the server
    "telemetry": 0,  # trace export (OTLP), configured once at start-up
    "audit": 1, "auth": 1,  # the audit trail; OAuth checks and token exchange (no transport, no server)
    "policy": 1,  # the policy file and its decisions, rate limits
    "tokens": 1, "validation": 1, "settingsdoc": 1,  # settingsdoc: .env.example, docs/settings.md, flag names
    "state": 1,  # per-session state: live here, and shared by replicas (Redis): records, bus, events
    "catalog": 2,
    "sources": 3,  # functions, JSONL files, upstream servers: they fill the catalog
    "search": 4, "manifest": 4,
    "learning": 5,  # learning from use: the usage log, its stores and prior; search reads it through search.prior
    "server.clients": 5, "server.subscriptions": 5, "server.surface": 5,
    "server.learning": 5, "server.rendering": 5, "server.signatures": 5, "server.access": 5,
    "server.metatools": 6, "server.middleware": 6, "server.metrics": 6,
    "server": 7, "server.core": 7, "server.middleware.shared_sessions": 7, "server.middleware.origin": 7,
    "transports": 8,
    "app": 9, "report": 9, "evaluate": 9,  # the assembly root and what the CLI runs besides serving
    "cli": 10, "__main__": 10, "__init__": 10,
}


def _key_of(module: str) -> str:
    parts = module.removesuffix(".__init__").split(".")
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in LAYERS:
            return key
    raise AssertionError(f"lazytools.{module} has no layer in tests/test_layers.py: place it")


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).with_suffix("")
        found.append((".".join(relative.parts), path))
    return found


def _imports(module: str, source: str, *, typing: bool = False) -> list[str]:
    """Absolute names (below lazytools) that `module`'s source imports at run time, ignoring `if TYPE_CHECKING:`
    blocks unless `typing`."""
    tree = ast.parse(source)
    # `module` names a file ("server.core", "server.__init__"): its package is everything before the last part.
    package = module.split(".")[:-1]
    names: list[str] = []
    for node in ast.walk(tree):
        if not typing and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join([*base, node.module] if node.module else base)
                names.append(target or node.names[0].name)
            elif node.module and node.module.startswith("lazytools."):
                names.append(node.module.removeprefix("lazytools."))
    return [name for name in names if name]


def _climbing(module: str, source: str) -> list[str]:
    """Each import of `module` that climbs to a higher layer, described."""
    own = LAYERS[_key_of(module)]
    return [f"lazytools.{module} (layer {own}) imports lazytools.{imported} (layer {LAYERS[_key_of(imported)]})"
            for imported in _imports(module, source) if LAYERS[_key_of(imported)] > own]


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_imports_go_one_way(module: str, path: Path) -> None:
    assert _climbing(module, path.read_text()) == []


@pytest.mark.parametrize(("module", "line", "imported"), [
    ("server.surface", "from .core import LazyServer", "server.core"),
    ("sources.gateway.upstream", "from ...server.metatools import SEARCH_TOOLS", "server.metatools"),
    ("catalog", "from lazytools.transports.http import serve_http", "transports.http"),
    ("search.index", "from ..cli import main", "cli"),
])
def test_a_climbing_import_is_caught(module: str, line: str, imported: str) -> None:
    """The check above can fail: a real module's source with one climbing import added is reported, naming it."""
    path = PACKAGE.joinpath(*module.split(".")).with_suffix(".py")
    source = path.read_text()
    assert _climbing(module, source) == []
    found = _climbing(module, f"{source}\n{line}\n")
    assert len(found) == 1 and found[0].split(" imports ")[1].startswith(f"lazytools.{imported} "), found


def test_an_import_for_type_checking_only_is_not_a_dependency() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .core import LazyServer\n"
    assert _climbing("server.surface", source) == []
    assert _climbing("server.surface", source.replace("if TYPE_CHECKING:\n    ", "")) != []


def test_the_server_imports_no_source() -> None:
    """The server serves what sources expose through its own contracts (origin.py, passthrough.UpstreamFeatures), so it
    imports nothing of `sources/`, even for type checking."""
    for path in sorted((PACKAGE / "server").rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        imported = _imports(module, path.read_text(), typing=True)
        assert not [name for name in imported if name.split(".")[0] == "sources"], path.name


def test_no_import_circle() -> None:
    """No module reaches itself through the imports it makes at run time. (Type-checking-only imports still
    close two circles: server.metrics and server.middleware.shared_sessions name LazyServer from server.core in annotations.)"""
    assert _circle(_graph(typing=False)) == []


def test_a_circle_is_caught() -> None:
    """The check above can fail: a real module importing, for type checking only, one that imports it is found."""
    graph = _graph(typing=False)
    assert "server.surface" in graph["server.core"]
    graph["server.surface"] = {*graph["server.surface"], "server.core"}
    found = _circle(graph)
    assert found[0] == found[-1] and {"server.core", "server.surface"} <= set(found), found


def _graph(*, typing: bool = True) -> dict[str, set[str]]:
    return {module: {_module_of(name) for name in _imports(module, path.read_text(), typing=typing)}
            for module, path in _modules()}


def _circle(graph: dict[str, set[str]]) -> list[str]:
    """The first import circle found (a module, what it imports, ..., the module again), or []."""
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> list[str]:
        if module in trail:
            return [*trail[trail.index(module):], module]
        if module in done or module not in graph:
            return []
        for imported in sorted(graph[module]):
            if found := visit(imported, [*trail, module]):
                return found
        done.add(module)
        return []

    for module in sorted(graph):
        if found := visit(module, []):
            return found
    return []


def _module_of(name: str) -> str:
    """The module an imported name lives in: `server.surface.SessionView` → `server.surface`."""
    def exists(dotted: str) -> bool:
        base = PACKAGE.joinpath(*dotted.split("."))
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()

    while name and not exists(name):
        name = name.rpartition(".")[0]
    return name if PACKAGE.joinpath(*name.split(".")).with_suffix(".py").is_file() else f"{name}.__init__"


def test_the_server_knows_no_transport() -> None:
    for path in sorted((PACKAGE / "server").glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        assert not [m for m in imported if m.split(".")[0] in ("starlette", "uvicorn", "transports")], path.name
    assert "LazyServer" in (PACKAGE / "server" / "core.py").read_text()


def test_every_subpackage_is_installed() -> None:
    """A folder with an `__init__.py` that pyproject's `packages` forgets would be missing from the wheel."""
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    listed = set(pyproject["tool"]["setuptools"]["packages"])
    folders = {".".join(("lazytools", *p.parent.relative_to(PACKAGE).parts)) for p in PACKAGE.rglob("__init__.py")}
    assert folders <= listed, sorted(folders - listed)
    assert (PACKAGE / "py.typed").is_file()


_OPTIONAL_AT_START = ("redis",)
"""Libraries a default start must not import (pyproject says when each is needed): redis-py and what it pulls in
cost ~0.2 s of CPU in every lazytools process, and only a state URL needs it."""


@pytest.mark.process
@pytest.mark.parametrize(("imported", "expected"), [
    ("lazytools.__main__, lazytools.cli, lazytools.app, lazytools.transports.http, lazytools.transports.stdio", []),
    ("lazytools.state.redis", ["redis"]),  # the check sees it when it is there
])
def test_a_default_start_imports_no_optional_library(imported: str, expected: list[str]) -> None:
    code = f"import json, sys, {imported}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert [name for name in json.loads(done.stdout) if name in _OPTIONAL_AT_START] == expected
