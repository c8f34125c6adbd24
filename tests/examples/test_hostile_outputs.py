"""The bundled tools' own answers to the inputs of issue #12: clear errors or valid, bounded results."""

import base64
import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from lazytools_examples import _regex_runner, build_catalog
from lazytools_examples._common import MAX_RESULT_BYTES, json_ready

Tools = dict[str, Callable[..., Any]]


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Tools:
    return {fn.__name__: fn for fns in build_catalog(tmp_path_factory.mktemp("root")).values() for fn in fns}


def _sent(value: Any) -> bytes:
    """The result as strict JSON in UTF-8: raises on NaN, on a lone surrogate, on too deep data."""
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, allow_nan=False)).encode()


def _jwt(payload: str) -> str:
    def seg(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    return seg('{"alg": "none"}') + "." + seg(payload) + ".sig"


def test_lone_surrogates_come_out_escaped(tools: Tools) -> None:
    assert _sent(tools["format_json"]('"\\ud800"')) == b'"\\ud800"'
    decoded = tools["decode_jwt_unverified"](_jwt('{"a": "x\\ud800y", "\\udfff": 1}'))
    assert decoded["payload"] == {"a": "x\\ud800y", "\\udfff": 1}
    _sent(decoded)


def test_deep_jwt_payloads_are_refused(tools: Tools) -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        tools["decode_jwt_unverified"](_jwt('{"a":' + "[" * 950 + "]" * 950 + "}"))
    with pytest.raises(ValueError, match="nested too deeply"):
        tools["decode_jwt_unverified"](_jwt('{"a":' + "[" * 5000 + "]" * 5000 + "}"))


def test_huge_integers_and_non_finite_floats(tools: Tools) -> None:
    with pytest.raises(ValueError, match="too large"):
        tools["evaluate_expression"]("2**99999")
    with pytest.raises(ValueError, match="too large"):
        tools["evaluate_expression"]("factorial(1000) * factorial(1000) * factorial(1000)")
    assert tools["evaluate_expression"]("2**1000")["result"] == 2**1000
    assert tools["evaluate_expression"]("inf - inf")["result"] == "NaN"
    assert tools["evaluate_expression"]("-inf")["result"] == "-Infinity"
    # Finite inputs whose arithmetic overflows are an error, not a successful "Infinity" or "NaN" root.
    for overflowing in (lambda: tools["solve_quadratic"](1e308, -1e308, 1.0), lambda: tools["solve_quadratic"](1e308, 0, 1),
                        lambda: tools["percentage_change"](1e-300, 1e308),
                        lambda: tools["compound_interest"](1e308, 100, 1000, 12),
                        lambda: tools["compound_interest"](1e308, 0, 1, 1, 1e308),
                        lambda: tools["convert_temperature"](1e308, "C", "F")):
        with pytest.raises(ValueError, match="too large (for a float|to represent)"):
            overflowing()
    assert _sent(tools["solve_quadratic"](1.0, -3.0, 2.0))
    with pytest.raises(ValueError, match="finite"):
        tools["round_significant"](math.inf)


def test_json_ready_bounds_depth_size_and_numbers() -> None:
    deep: Any = 1
    for _ in range(150):
        deep = [deep]
    with pytest.raises(ValueError, match="nested more than"):
        json_ready(deep)
    with pytest.raises(ValueError, match="limit for a tool result"):
        json_ready({"k": "x" * MAX_RESULT_BYTES})
    with pytest.raises(ValueError, match="limit for a tool result"):
        json_ready(["\x00" * (MAX_RESULT_BYTES // 6)])  # each NUL is six bytes of JSON
    assert json_ready({"a": [math.nan, math.inf, -math.inf]}) == {"a": ["NaN", "Infinity", "-Infinity"]}
    assert json_ready({"\ud800": "\udfff"}) == {"\\ud800": "\\udfff"}


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("flatten_json", {"data": {"k": list(range(400))}, "separator": "s" * 1_000_000}),
        ("flatten_json", {"data": {"k": list(range(100_000))}, "separator": "s" * 100}),
        pytest.param("regex_find_all", {"pattern": "(?=(.*))", "text": "x" * 20_000, "max_matches": 10_000},
                     marks=pytest.mark.process),  # the regex tools match in a child interpreter
        pytest.param("regex_split", {"pattern": "(?=(.*))", "text": "x" * 20_000},
                     marks=pytest.mark.process),  # the regex tools match in a child interpreter
        pytest.param("regex_test", {"pattern": "(?=(.*))" * 100, "text": "x" * 50_000},
                     marks=pytest.mark.process),  # the regex tools match in a child interpreter
        pytest.param("regex_replace", {"pattern": "x", "replacement": "\\g<0>" + "y" * 999, "text": "x" * 100_000},
                     marks=pytest.mark.process),  # the regex tools match in a child interpreter
        pytest.param("regex_replace", {"pattern": "", "replacement": "y" * 1000, "text": "x" * 100_000},
                     marks=pytest.mark.process),  # the regex tools match in a child interpreter
        ("json_to_csv", {"records": [{f"k{i}": 1 for i in range(200_000)}] + [{} for _ in range(9_999)]}),
        ("records_to_markdown_table", {"records": [{"a": "x" * 100_000}] + [{"a": 1} for _ in range(9_999)]}),
        ("csv_to_json", {"csv_text": ",".join(f"c{i}" for i in range(50_000)) + "\n" + ("," * 49_999 + "\n") * 10}),
        ("format_json", {"json_text": "[" * 99 + ",".join(["1"] * 100_000) + "]" * 99, "indent": 8}),
        ("find_and_replace", {"text": "a" * 100_000, "find": "a", "replace": "b" * 1000}),
        ("wrap_text", {"text": "a " * 100_000, "indent": "x" * 1000}),
    ],
)
def test_amplifying_calls_stop_with_a_clear_error(tools: Tools, tool: str, arguments: dict[str, Any],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # What stops the regex tools here must be the result-size limit: their 3 s child timeout was met first on a
    # busy machine, where starting the child took that long.
    monkeypatch.setattr(_regex_runner, "DEFAULT_TIMEOUT_SECONDS", 300.0)
    with pytest.raises(ValueError, match="limit for a tool result|too long"):
        tools[tool](**arguments)


@pytest.mark.process  # the regex tool runs in a child interpreter
def test_bounded_outputs_still_work_at_normal_sizes(tools: Tools) -> None:
    assert tools["flatten_json"]({"a": {"b": [1, 2]}}, separator="__") == {"a__b__0": 1, "a__b__1": 2}
    assert tools["regex_find_all"]("(?=(.))", "abc")["count"] == 3
    assert tools["json_to_csv"]([{"a": 1}, {"b": 2}]) == "a,b\n1,\n,2\n"
    assert tools["find_and_replace"]("Hello hello", "HELLO", "bye", case_sensitive=False)["text"] == "bye bye"
    assert tools["find_and_replace"]("a\\1", "a", "\\2")["text"] == "\\2\\1"


def test_errors_do_not_echo_huge_arguments(tools: Tools) -> None:
    with pytest.raises(ValueError) as caught:
        tools["convert_color"]("q" * 1_000_000)
    assert len(str(caught.value)) < 1200


def test_lone_surrogates_in_arguments_are_clear_errors(tools: Tools) -> None:
    with pytest.raises(ValueError, match="cannot be encoded as UTF-8"):
        tools["hash_text"]("a\ud800")
    with pytest.raises(ValueError, match="cannot be encoded as UTF-8"):
        tools["read_text_file"]("a\ud800")
