"""Randomness: dice rolls, random numbers, random picks and shuffles (optionally seeded)."""

import math
import random
import re
import secrets
from typing import Annotated, Any

from pydantic import Field

from ._common import ensure_max_items

__all__ = ["roll_dice", "random_number", "pick_random_items", "shuffle_items"]

Seed = Annotated[int | None, Field(description="Optional seed for repeatable results; omit for true randomness.")]
Items = Annotated[list[str], Field(description="The items to choose from.", min_length=1)]


def _rng(seed: int | None) -> random.Random:
    # Unseeded calls use the OS source so results are unpredictable (e.g. raffles).
    return random.Random(seed) if seed is not None else secrets.SystemRandom()


def roll_dice(
    notation: Annotated[str, Field(description="Dice notation like 'd20', '2d6', '3d8+4' or '4d6-1'.")] = "1d6",
    seed: Seed = None,
) -> dict[str, Any]:
    """Roll dice described in standard notation such as 2d6+3 and return each roll and the total."""
    if len(notation) > 100:
        raise ValueError("dice notation is too long (limit is 100 characters)")
    # Spaces are dropped first: "\s*(\d*)\s*" let two space loops share every run of spaces (quadratic).
    match = re.fullmatch(r"(\d{0,9})[dD](\d{1,9})(?:([+-])(\d{1,9}))?", "".join(notation.split()))
    if not match:
        raise ValueError(f"invalid dice notation {notation!r}; use e.g. '2d6+3'")
    count, sides = int(match.group(1) or 1), int(match.group(2))
    if not 1 <= count <= 1000 or not 2 <= sides <= 1_000_000:
        raise ValueError("use 1-1000 dice with 2-1,000,000 sides")
    modifier = int(match.group(4) or 0) * (-1 if match.group(3) == "-" else 1)
    rng = _rng(seed)
    rolls = [rng.randint(1, sides) for _ in range(count)]
    return {"rolls": rolls, "modifier": modifier, "total": sum(rolls) + modifier}


def random_number(
    minimum: Annotated[float, Field(description="Lowest possible value (inclusive).")] = 1,
    maximum: Annotated[float, Field(description="Highest possible value (inclusive).")] = 100,
    count: Annotated[int, Field(description="How many numbers to generate.", ge=1, le=10_000)] = 1,
    integer: Annotated[bool, Field(description="Whole numbers only.")] = True,
    seed: Seed = None,
) -> list[int] | list[float]:
    """Generate random numbers (integers or decimals) within a range."""
    if not (math.isfinite(minimum) and math.isfinite(maximum)):
        raise ValueError("minimum and maximum must be finite numbers")
    if minimum > maximum:
        raise ValueError("minimum must not be greater than maximum")
    if maximum - minimum > 1e300:
        raise ValueError("the range from minimum to maximum is too wide")
    if not 1 <= count <= 10_000:
        raise ValueError("count must be between 1 and 10000")
    rng = _rng(seed)
    if integer:
        low, high = int(-(-minimum // 1)), int(maximum // 1)  # ceil and floor
        if low > high:
            raise ValueError("there is no whole number between minimum and maximum")
        return [rng.randint(low, high) for _ in range(count)]
    return [rng.uniform(minimum, maximum) for _ in range(count)]


def pick_random_items(
    items: Items,
    count: Annotated[int, Field(description="How many items to pick.", ge=1)] = 1,
    allow_repeats: Annotated[bool, Field(description="Allow the same item to be picked more than once.")] = False,
    seed: Seed = None,
) -> list[str]:
    """Randomly pick one or more items from a list (e.g. choose a winner or a random sample)."""
    ensure_max_items(items, "items")
    if not items:
        raise ValueError("items must not be empty")
    if count < 1:
        raise ValueError("count must be at least 1")
    rng = _rng(seed)
    if allow_repeats:
        if count > 100_000:
            raise ValueError("count is too large (limit is 100000)")
        return [rng.choice(items) for _ in range(count)]
    if count > len(items):
        raise ValueError(f"cannot pick {count} distinct items from a list of {len(items)}; set allow_repeats")
    return rng.sample(items, count)


def shuffle_items(items: Items, seed: Seed = None) -> list[str]:
    """Shuffle a list of items into a random order."""
    ensure_max_items(items, "items")
    shuffled = list(items)
    _rng(seed).shuffle(shuffled)
    return shuffled
