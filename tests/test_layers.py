"""Imports go one way: settings → sources → catalog → search → sessions → meta-tools → server → transports → CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import lazytools

PACKAGE = Path(lazytools.__file__).resolve().parent

# Lower numbers are lower layers. A module may import only modules of its own layer or lower ones.
LAYERS: dict[str, int] = {
    "errors": 0, "settings": 0, "entry": 0,
    "clients": 1, "functions": 1, "configtext": 1, "mcpconfig": 1, "tokens": 1,
    "catalog": 2,
    "upstream": 3, "gateway": 3, "jsonl_catalog": 3,  # sources that fill the catalog
    "search": 4, "manifest": 4,
    "sessions": 5, "surface": 5, "validation": 5, "subscriptions": 5,
    "metatools": 6,
    "server": 7,
    "transports": 8,
    "app": 9, "report": 9, "evaluate": 9, "bench": 9, "bench_search": 9, "bench_gateway": 9, "bench_http": 9,
    "soak": 9,
    "cli": 10, "__main__": 10, "__init__": 10,
}


def _layer_of(module: str) -> int:
    top = module.split(".")[0]
    assert top in LAYERS, f"lazytools.{module} has no layer in tests/test_layers.py: place it"
    return LAYERS[top]


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).with_suffix("")
        found.append((".".join(relative.parts), path))
    return found


def _imports(module: str, path: Path) -> list[str]:
    """Absolute names (below lazytools) imported at run time, ignoring `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text())
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")[:-1]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
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
    own = _layer_of(module)
    for imported in _imports(module, path):
        if imported.split(".")[0] == module.split(".")[0]:
            continue  # inside one subpackage
        assert _layer_of(imported) <= own, f"lazytools.{module} (layer {own}) imports lazytools.{imported}"


def test_the_server_knows_no_transport() -> None:
    tree = ast.parse((PACKAGE / "server.py").read_text())
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert imported and not [m for m in imported if m.split(".")[0] in ("starlette", "uvicorn", "transports")]
