"""Tests for lazytools_examples.mathtools."""

import math

import pytest
from lazytools_examples import mathtools as m


def test_evaluate_expression() -> None:
    assert m.evaluate_expression("2 * (3 + 4) ** 2 / sqrt(16)")["result"] == 24.5
    assert m.evaluate_expression("x ** 2 + y", {"x": 3, "y": 1})["result"] == 10
    assert m.evaluate_expression("round(pi, 2) + max(1, 5) - 7 // 2 + 7 % 4")["result"] == pytest.approx(3.14 + 5 - 3 + 3)
    assert m.evaluate_expression("factorial(5)")["result"] == 120


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('echo hi')", "unknown function|unsupported"),
        ("(1).__class__", "unsupported syntax"),
        ("1 / 0", "division by zero"),
        ("9 ** 9 ** 9", "too large"),
        ("2 +", "invalid expression"),
        ("foo + 1", "unknown name"),
        ("sqrt(-1)", "cannot evaluate"),
        ("'a' * 3", "unsupported syntax"),
        ("1" + "+1" * 400, "too complex"),
    ],
)
def test_evaluate_expression_rejects(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        m.evaluate_expression(expression)


def test_describe_numbers() -> None:
    stats = m.describe_numbers([1, 2, 3, 4, 100])
    assert stats["mean"] == 22 and stats["median"] == 3 and stats["range"] == 99
    assert stats["quartiles"]["q1"] == 2 and stats["quartiles"]["q3"] == 4
    assert stats["sample_stdev"] == pytest.approx(43.6177, rel=1e-4)
    assert m.describe_numbers([5])["sample_stdev"] is None
    with pytest.raises(ValueError, match="at least one"):
        m.describe_numbers([])
    with pytest.raises(ValueError, match="finite"):
        m.describe_numbers([1, math.nan])


def test_percentage_change() -> None:
    assert m.percentage_change(50, 75)["percent_change"] == 50.0
    assert m.percentage_change(-100, -50)["percent_change"] == 50.0
    with pytest.raises(ValueError, match="from 0"):
        m.percentage_change(0, 5)


def test_gcd_lcm() -> None:
    assert m.gcd_lcm([12, 18, 30]) == {"gcd": 6, "lcm": 180}
    with pytest.raises(ValueError, match="at least two"):
        m.gcd_lcm([4])


def test_check_prime() -> None:
    assert m.check_prime(97) == {"n": 97, "is_prime": True, "next_prime": 101, "previous_prime": 89}
    assert m.check_prime(1_000_000_007)["is_prime"] is True
    assert m.check_prime(561)["is_prime"] is False  # Carmichael number
    assert m.check_prime(1)["previous_prime"] is None
    with pytest.raises(ValueError, match="too large"):
        m.check_prime(10**30)


def test_prime_factors() -> None:
    result = m.prime_factors(360)
    assert result["factors"] == [2, 2, 2, 3, 3, 5]
    assert result["expression"] == "2^3 * 3^2 * 5"
    assert m.prime_factors(999_999_000_001)["factors"] == [999_999_000_001]
    with pytest.raises(ValueError, match="at least 2"):
        m.prime_factors(1)


def test_convert_number_base() -> None:
    assert m.convert_number_base("ff", 16, 2) == {"result": "11111111", "decimal": 255}
    assert m.convert_number_base("-0b101", 2, 10)["result"] == "-5"
    assert m.convert_number_base("0", 10, 16)["result"] == "0"
    assert m.convert_number_base("z", 36, 10)["result"] == "35"
    with pytest.raises(ValueError, match="not a valid base-2"):
        m.convert_number_base("12", 2, 10)


def test_round_significant() -> None:
    assert m.round_significant(123456, 3) == 123000
    assert m.round_significant(0.00123456, 2) == 0.0012
    assert m.round_significant(0, 3) == 0


def test_solve_quadratic() -> None:
    real = m.solve_quadratic(1, -3, 2)
    assert real["kind"] == "real" and [r["real"] for r in real["roots"]] == [1.0, 2.0]
    assert len(m.solve_quadratic(1, 2, 1)["roots"]) == 1
    complex_ = m.solve_quadratic(1, 0, 1)
    assert complex_["kind"] == "complex" and complex_["roots"][1] == {"real": 0.0, "imaginary": 1.0}
    with pytest.raises(ValueError, match="must not be 0"):
        m.solve_quadratic(0, 1, 1)
