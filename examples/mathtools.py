"""Math and statistics tools, including a safe arithmetic evaluator built on `ast`."""

import ast
import math
import operator
import statistics
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from ._common import MAX_RESULT_INT_BITS, ensure_finite, ensure_max_items

__all__ = [
    "evaluate_expression",
    "describe_numbers",
    "percentage_change",
    "gcd_lcm",
    "check_prime",
    "prime_factors",
    "convert_number_base",
    "round_significant",
    "solve_quadratic",
]

_BIN_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY_OPS: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}


def _factorial(n: float) -> int:
    if n != int(n) or n < 0 or n > 1000:
        raise ValueError("factorial needs a whole number between 0 and 1000")
    return math.factorial(int(n))


def _round(x: Any, ndigits: Any = None) -> Any:
    # round(5, -10**7) would build 10**(10**7) first.
    if ndigits is not None and (not isinstance(ndigits, int) or abs(ndigits) > 1000):
        raise ValueError("round() takes a whole number of digits between -1000 and 1000")
    return round(x, ndigits)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "cbrt": lambda x: math.copysign(abs(x) ** (1 / 3), x),
    "abs": abs, "round": _round, "floor": math.floor, "ceil": math.ceil,
    "exp": math.exp, "ln": math.log, "log": math.log, "log10": math.log10, "log2": math.log2,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "degrees": math.degrees, "radians": math.radians, "hypot": math.hypot,
    "min": min, "max": max, "factorial": _factorial,
}
_MAX_EXPRESSION_CHARS = 1000
_MAX_NODES = 300
# Bounds the size of integers, in every step, so `9**9**9` cannot hang the server and every result can be shown
# (Python refuses to print integers of more than 4300 digits; 2**99999 used to end in that error, unexplained).
_MAX_POWER_BITS = MAX_RESULT_INT_BITS


def _bounded(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_INT_BITS:
        raise ValueError(f"an intermediate result is too large: more than {MAX_RESULT_INT_BITS:,} bits "
                         "(about 4,200 digits)")
    return value


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1:
        if exponent * math.log2(abs(base)) > _MAX_POWER_BITS:
            raise ValueError(f"result of ** is too large: more than {_MAX_POWER_BITS:,} bits (about 4,200 digits)")
    return operator.pow(base, exponent)


def _eval_node(node: ast.AST, names: dict[str, float]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval_node(node.body, names)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        raise ValueError(f"unknown name {node.id!r}")
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN_OPS:
        left, right = _eval_node(node.left, names), _eval_node(node.right, names)
        if isinstance(node.op, ast.Pow):
            return _bounded(_power(left, right))
        return _bounded(_BIN_OPS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY_OPS:
        return _UNARY_OPS[type(node.op)](_eval_node(node.operand, names))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        func = _FUNCTIONS.get(node.func.id)
        if func is None:
            raise ValueError(f"unknown function {node.func.id!r}; allowed: {', '.join(sorted(_FUNCTIONS))}")
        return _bounded(func(*(_eval_node(arg, names) for arg in node.args)))
    raise ValueError(f"unsupported syntax: {type(node).__name__}")


def evaluate_expression(
    expression: Annotated[str, Field(description="Arithmetic expression, e.g. '2 * (3 + 4) ** 2 / sqrt(16)'.")],
    variables: Annotated[
        dict[str, float] | None, Field(description="Optional variable values, e.g. {'x': 2.5}.")
    ] = None,
) -> dict[str, Any]:
    """Calculate a math expression safely, like a calculator: + - * / ** %, parentheses, sqrt, sin, log, pi, e."""
    if len(expression) > _MAX_EXPRESSION_CHARS:
        raise ValueError(f"expression is too long (limit is {_MAX_EXPRESSION_CHARS} characters)")
    names = dict(_CONSTANTS)
    for key, value in (variables or {}).items():
        if not key.isidentifier():
            raise ValueError(f"invalid variable name {key!r}")
        names[key] = value
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"invalid expression: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ValueError("expression is nested too deeply") from None
    if sum(1 for _ in ast.walk(tree)) > _MAX_NODES:
        raise ValueError("expression is too complex")
    try:
        result = _eval_node(tree, names)
    except ZeroDivisionError:
        raise ValueError("division by zero") from None
    except (OverflowError, TypeError, ValueError) as exc:
        raise ValueError(f"cannot evaluate expression: {exc}") from None
    except RecursionError:
        raise ValueError("expression is nested too deeply") from None
    if isinstance(result, complex):
        raise ValueError("result is a complex number")
    if isinstance(result, float) and not math.isfinite(result):
        # JSON has no NaN or Infinity; say it in words rather than send invalid JSON.
        return {"expression": expression, "result": "NaN" if math.isnan(result) else "Infinity" if result > 0 else "-Infinity"}
    return {"expression": expression, "result": result}


def describe_numbers(
    numbers: Annotated[list[float], Field(description="The data values.", min_length=1)],
) -> dict[str, Any]:
    """Compute descriptive statistics of a list of numbers: mean, median, mode, min, max, standard deviation, variance, quartiles."""
    ensure_max_items(numbers, "numbers")
    if not numbers:
        raise ValueError("numbers must contain at least one value")
    if any(math.isnan(x) or math.isinf(x) for x in numbers):
        raise ValueError("numbers must be finite")
    many = len(numbers) > 1
    try:
        return _describe(numbers, many)
    except OverflowError:
        raise ValueError("the numbers are too large to sum (their total overflows a float)") from None


def _describe(numbers: list[float], many: bool) -> dict[str, Any]:
    result: dict[str, Any] = {
        "count": len(numbers),
        "sum": math.fsum(numbers),
        "mean": statistics.fmean(numbers),
        "median": statistics.median(numbers),
        "modes": statistics.multimode(numbers),
        "min": min(numbers),
        "max": max(numbers),
        "range": max(numbers) - min(numbers),
        "population_stdev": statistics.pstdev(numbers),
        "sample_stdev": statistics.stdev(numbers) if many else None,
        "sample_variance": statistics.variance(numbers) if many else None,
    }
    if many:
        q1, q2, q3 = statistics.quantiles(numbers, n=4, method="inclusive")
        result["quartiles"] = {"q1": q1, "q2": q2, "q3": q3, "iqr": q3 - q1}
    return result


def percentage_change(
    old_value: Annotated[float, Field(description="The starting value.")],
    new_value: Annotated[float, Field(description="The ending value.")],
) -> dict[str, float]:
    """Calculate the percentage increase or decrease from an old value to a new value."""
    if old_value == 0:
        raise ValueError("percentage change from 0 is undefined")
    change = ensure_finite(new_value - old_value, "the difference")
    percent = ensure_finite(change / abs(old_value) * 100, "the percent change")
    return {"difference": change, "percent_change": percent, "ratio": ensure_finite(new_value / old_value, "the ratio")}


def gcd_lcm(
    numbers: Annotated[list[int], Field(description="Two or more integers.", min_length=2)],
) -> dict[str, int]:
    """Compute the greatest common divisor (GCD) and least common multiple (LCM) of integers."""
    ensure_max_items(numbers, "numbers", 10_000)
    if len(numbers) < 2:
        raise ValueError("give at least two integers")
    lcm = 1
    for number in numbers:
        # The LCM of many large numbers grows with their product: stop before it passes what can be shown.
        lcm = math.lcm(lcm, number)
        if lcm.bit_length() > MAX_RESULT_INT_BITS:
            raise ValueError(f"the LCM has more than {MAX_RESULT_INT_BITS:,} bits (about 4,200 digits)")
    return {"gcd": math.gcd(*numbers), "lcm": lcm}


def _is_probable_prime(n: int) -> bool:
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in small:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    # These witnesses make Miller-Rabin exact for every n below 3.3e24.
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


_PRIME_LIMIT = 10**24


def check_prime(
    n: Annotated[int, Field(description="Whole number to test (up to 10^24).")],
) -> dict[str, Any]:
    """Check whether an integer is a prime number and give the nearest primes around it."""
    if abs(n) > _PRIME_LIMIT:
        raise ValueError("n is too large (limit is 10^24)")
    nxt = max(n + 1, 2)
    while not _is_probable_prime(nxt):
        nxt += 1
    prev = n - 1
    while prev >= 2 and not _is_probable_prime(prev):
        prev -= 1
    return {"n": n, "is_prime": _is_probable_prime(n), "next_prime": nxt, "previous_prime": prev if prev >= 2 else None}


def prime_factors(
    n: Annotated[int, Field(description="Integer >= 2 to factorize (up to 10^12).")],
) -> dict[str, Any]:
    """Factorize an integer into its prime factors, e.g. 360 = 2^3 * 3^2 * 5."""
    if n < 2:
        raise ValueError("n must be at least 2")
    if n > 10**12:
        raise ValueError("n is too large to factorize (limit is 10^12)")
    factors: dict[int, int] = {}
    remaining, p = n, 2
    while p * p <= remaining:
        while remaining % p == 0:
            factors[p] = factors.get(p, 0) + 1
            remaining //= p
        p += 1 if p == 2 else 2
    if remaining > 1:
        factors[remaining] = factors.get(remaining, 0) + 1
    expanded = [f for f, k in factors.items() for _ in range(k)]
    text = " * ".join(f"{f}^{k}" if k > 1 else str(f) for f, k in factors.items())
    return {"n": n, "factors": expanded, "powers": {str(f): k for f, k in factors.items()}, "expression": text}


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def convert_number_base(
    value: Annotated[str, Field(description="The number as text, e.g. 'ff', '0b1010', '-755'.")],
    from_base: Annotated[int, Field(description="Base of the input (2-36).", ge=2, le=36)] = 10,
    to_base: Annotated[int, Field(description="Base of the output (2-36).", ge=2, le=36)] = 2,
) -> dict[str, Any]:
    """Convert an integer between number bases such as binary, octal, decimal and hexadecimal (bases 2-36)."""
    if not 2 <= from_base <= 36 or not 2 <= to_base <= 36:
        raise ValueError("bases must be between 2 and 36")
    cleaned = value.strip().replace("_", "").lower()
    if len(cleaned) > 1000:
        raise ValueError("value is too long (limit is 1000 digits)")
    negative = cleaned.startswith("-")
    cleaned = cleaned.lstrip("+-")
    prefixes = {16: "0x", 8: "0o", 2: "0b"}
    if from_base in prefixes and cleaned.startswith(prefixes[from_base]):
        cleaned = cleaned[2:]
    try:
        number = int(cleaned, from_base)
    except ValueError:
        raise ValueError(f"{value!r} is not a valid base-{from_base} number") from None
    digits = ""
    rest = number
    while True:
        rest, digit = divmod(rest, to_base)
        digits = _DIGITS[digit] + digits
        if rest == 0:
            break
    sign = "-" if negative and number else ""
    return {"result": sign + digits, "decimal": -number if negative else number}


def round_significant(
    value: Annotated[float, Field(description="The number to round.")],
    figures: Annotated[int, Field(description="Number of significant figures to keep.", ge=1, le=17)] = 3,
) -> float:
    """Round a number to a given number of significant figures, e.g. 123456 -> 123000 with 3 figures."""
    if not 1 <= figures <= 17:
        raise ValueError("figures must be between 1 and 17")
    if not math.isfinite(value):
        raise ValueError("value must be a finite number")
    if value == 0:
        return value
    return round(value, figures - 1 - math.floor(math.log10(abs(value))))


def solve_quadratic(
    a: Annotated[float, Field(description="Coefficient of x^2 (must not be 0).")],
    b: Annotated[float, Field(description="Coefficient of x.")],
    c: Annotated[float, Field(description="Constant term.")],
) -> dict[str, Any]:
    """Solve a quadratic equation a*x^2 + b*x + c = 0, returning real or complex roots."""
    if a == 0:
        raise ValueError("a must not be 0 for a quadratic equation")
    disc = ensure_finite(b * b - 4 * a * c, "the discriminant b*b - 4*a*c")
    if disc >= 0:
        root = math.sqrt(disc)
        roots = sorted({(-b - root) / (2 * a), (-b + root) / (2 * a)})
        return {"discriminant": disc, "kind": "real", "roots": [{"real": r, "imaginary": 0.0} for r in roots]}
    real, imag = -b / (2 * a), math.sqrt(-disc) / (2 * abs(a))
    return {
        "discriminant": disc,
        "kind": "complex",
        "roots": [{"real": real, "imaginary": -imag}, {"real": real, "imaginary": imag}],
    }
