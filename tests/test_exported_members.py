"""The public surface of the package is deliberate: this list changes only on purpose."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import lazytools

ROOT = Path(__file__).resolve().parent.parent


def test_exported_members() -> None:
    assert sorted(lazytools.__all__) == sorted([
        "Catalog", "ConfigError", "FunctionGroup", "Group", "LazyServer", "LazyToolsError", "Settings",
        "ToolArgumentsError", "ToolEntry", "ToolExecutionError", "ToolNotEnabledError", "UnknownToolError",
        "UpstreamError", "UpstreamTimeoutError", "UpstreamUnavailableError", "build_server", "function_tool",
    ])
    for name in lazytools.__all__:
        # Each name is the class or function of that name (the package loads them lazily), not a stand-in.
        assert getattr(lazytools, name).__name__ == name


def _sort_key(name: str) -> tuple[int, str]:
    """Constants, then classes, then the rest, each alphabetical (ruff's RUF022 order)."""
    return (0 if name.upper() == name else 1 if name[:1].isupper() else 2, name)


def _declared_all(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            assert isinstance(node.value, ast.List | ast.Tuple), f"{path}: __all__ is not a literal list"
            return [ast.literal_eval(element) for element in node.value.elts]
    return None


def _modules_with_all() -> list[Path]:
    # The example tool modules are left out: their __all__ lists the tools in the bundled catalog's order.
    paths = [*sorted((ROOT / "lazytools").rglob("*.py")), *sorted((ROOT / "examples").glob("_*.py"))]
    return [path for path in paths if _declared_all(path) is not None]


@pytest.mark.parametrize("path", _modules_with_all(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_all_is_sorted_and_names_what_the_module_defines(path: Path) -> None:
    declared = _declared_all(path)
    assert declared is not None
    assert declared == sorted(declared, key=_sort_key), path
    module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"))
    assert [name for name in declared if not hasattr(module, name)] == []


def test_the_order_check_can_fail(tmp_path: Path) -> None:
    unsorted = tmp_path / "m.py"
    unsorted.write_text('__all__ = ["b", "A", "a"]\n')
    declared = _declared_all(unsorted)
    assert declared == ["b", "A", "a"] and declared != sorted(declared, key=_sort_key)
