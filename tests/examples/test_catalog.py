"""Catalog-wide checks: size, unique names, docstrings, summaries and pydantic schemas."""

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lazytools_examples
import pydantic
from lazytools_examples import CATEGORY_SUMMARIES, build_catalog
from pydantic import TypeAdapter, create_model

SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def _tools(root: Path) -> list[tuple[str, Callable[..., Any]]]:
    return [(category, fn) for category, fns in build_catalog(root).items() for fn in fns]


def test_catalog_has_enough_tools_and_categories(tmp_path: Path) -> None:
    catalog = build_catalog(tmp_path)
    assert len(catalog) >= 8
    assert sum(len(fns) for fns in catalog.values()) >= 60
    assert all(fns for fns in catalog.values()), "every category needs at least one tool"


def test_tool_names_are_unique_snake_case_and_short(tmp_path: Path) -> None:
    names = [fn.__name__ for _, fn in _tools(tmp_path)]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    for name in names:
        assert SNAKE.match(name), name
        assert len(name) <= 40, name


def test_every_category_has_a_short_summary(tmp_path: Path) -> None:
    catalog = build_catalog(tmp_path)
    assert set(catalog) == set(CATEGORY_SUMMARIES)
    for category, summary in CATEGORY_SUMMARIES.items():
        assert SNAKE.match(category), category
        assert summary.strip() and len(summary) <= 80, category


def test_every_tool_has_a_one_sentence_docstring(tmp_path: Path) -> None:
    for _, fn in _tools(tmp_path):
        doc = inspect.getdoc(fn)
        assert doc, fn.__name__
        first = doc.splitlines()[0]
        assert first.endswith(".") and 20 <= len(first) <= 130, (fn.__name__, first)


def test_every_parameter_is_typed_described_and_schema_ready(tmp_path: Path) -> None:
    for _, fn in _tools(tmp_path):
        signature = inspect.signature(fn)
        fields: dict[str, Any] = {}
        for param in signature.parameters.values():
            assert param.annotation is not inspect.Parameter.empty, (fn.__name__, param.name)
            assert param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, (fn.__name__, param.name)
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (param.annotation, default)
        schema = create_model(f"{fn.__name__}_args", **fields).model_json_schema()
        assert schema["type"] == "object"
        for name in signature.parameters:
            assert schema["properties"][name].get("description"), (fn.__name__, name)
        assert signature.return_annotation is not inspect.Signature.empty, fn.__name__
        TypeAdapter(signature.return_annotation).json_schema()


def test_every_tool_accepts_validate_call_and_is_synchronous(tmp_path: Path) -> None:
    for _, fn in _tools(tmp_path):
        assert not inspect.iscoroutinefunction(fn), fn.__name__
        wrapped = pydantic.validate_call(fn)
        assert callable(wrapped)


def test_module_all_lists_exactly_the_catalog_tools(tmp_path: Path) -> None:
    names = {fn.__name__ for _, fn in _tools(tmp_path)}
    exported: set[str] = set()
    for modules in lazytools_examples._MODULES.values():
        for module in modules:
            for name in module.__all__:
                assert inspect.isfunction(getattr(module, name)), (module.__name__, name)
            exported.update(module.__all__)
    assert exported | {"list_directory", "read_text_file", "get_file_info", "search_in_files", "find_files",
                       "count_file_lines", "directory_tree", "file_checksum"} == names


def test_validate_call_coerces_and_rejects_arguments() -> None:
    from lazytools_examples.units import convert_length

    wrapped = pydantic.validate_call(convert_length)
    assert wrapped("1", "km", "m")["result"] == 1000.0
    try:
        wrapped(value=1, from_unit="parsec", to_unit="m")
    except pydantic.ValidationError as exc:
        assert "from_unit" in str(exc)
    else:
        raise AssertionError("an unknown unit must be rejected by the schema")


def test_every_tool_is_exercised_by_a_test(tmp_path: Path) -> None:
    here = Path(__file__).parent
    sources = "\n".join(p.read_text() for p in here.glob("test_*.py") if p.name != "test_catalog.py")
    untested = [fn.__name__ for _, fn in _tools(tmp_path) if not re.search(rf"\b{fn.__name__}\b", sources)]
    assert untested == []
