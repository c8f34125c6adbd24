"""Imports go one way: settings → sources → catalog → search → sessions → meta-tools → server → transports → CLI.

Each folder is one concept (`sources/`, `search/`, `server/`, `transports/`); modules inside a folder have their
own layers where they differ (the server's sessions sit below its meta-tools, which sit below its wiring).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

import lazytools

PACKAGE = Path(lazytools.__file__).resolve().parent

# Lower numbers are lower layers. A module may import only modules of its own layer or lower ones. A module's layer
# is that of the longest key that is its name or a package above it ("sources.gateway.upstream" → "sources").
LAYERS: dict[str, int] = {
    # what everything shares: errors, settings, the tool-name policy, the private-SDK adapter, the surfaces' names
    "errors": 0, "settings": 0, "names": 0, "entry": 0, "sdk": 0, "modes": 0,
    "safetext": 0, "threads": 0, "origin": 0,  # origin: whose request is served, read by server and gateway
    "tokens": 1, "validation": 1, "settingsdoc": 1,  # settingsdoc: .env.example, docs/settings.md, flag names
    "catalog": 2,
    "sources": 3,  # functions, JSONL files, upstream servers: they fill the catalog
    "search": 4, "manifest": 4,
    "server.sessions": 5, "server.clients": 5, "server.subscriptions": 5, "server.surface": 5,
    "server.metatools": 6,
    "server": 7, "server.core": 7,
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


def _imports(module: str, path: Path, *, typing: bool = False) -> list[str]:
    """Absolute names (below lazytools) imported at run time, ignoring `if TYPE_CHECKING:` blocks unless `typing`."""
    tree = ast.parse(path.read_text())
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


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_imports_go_one_way(module: str, path: Path) -> None:
    own = LAYERS[_key_of(module)]
    for imported in _imports(module, path):
        assert LAYERS[_key_of(imported)] <= own, (
            f"lazytools.{module} (layer {own}) imports lazytools.{imported} (layer {LAYERS[_key_of(imported)]})"
        )


def test_a_higher_import_is_caught() -> None:
    """The check above can fail: the server's sessions may not import its wiring, nor sources the server."""
    assert LAYERS[_key_of("server.core")] > LAYERS[_key_of("server.sessions")]
    assert LAYERS[_key_of("server.metatools")] > LAYERS[_key_of("sources.gateway.upstream")]
    assert _imports("server.sessions", PACKAGE / "server" / "sessions.py") == ["modes"]


def test_the_server_imports_no_source() -> None:
    """The server serves what sources expose through its own contracts (origin.py, passthrough.Front), so it
    imports nothing of `sources/`, even for type checking."""
    for path in sorted((PACKAGE / "server").glob("*.py")):
        module = f"server.{path.stem}"
        assert not [m for m in _imports(module, path, typing=True) if m.split(".")[0] == "sources"], path.name


def test_no_import_circle() -> None:
    """No module reaches itself through imports, counting those made for type checking only."""
    graph = {module: {_module_of(name) for name in _imports(module, path, typing=True)} for module, path in _modules()}
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            raise AssertionError("import circle: " + " -> ".join([*trail[trail.index(module):], module]))
        if module in done or module not in graph:
            return
        for imported in sorted(graph[module]):
            visit(imported, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_a_circle_is_caught(tmp_path: Path) -> None:
    """The check above can fail: two modules importing each other for type checking only are one circle."""
    (tmp_path / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (tmp_path / "b.py").write_text("from .a import A\n")
    assert _imports("server.a", tmp_path / "a.py", typing=True) == ["server.b"]
    assert _imports("server.a", tmp_path / "a.py") == []


def _module_of(name: str) -> str:
    """The module an imported name lives in: `server.surface.Surface` → `server.surface`."""
    while name and not (PACKAGE / (name.replace(".", "/") + ".py")).is_file() and not (
            PACKAGE / name.replace(".", "/") / "__init__.py").is_file():
        name = name.rpartition(".")[0]
    return name if (PACKAGE / (name.replace(".", "/") + ".py")).is_file() else f"{name}.__init__"


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
