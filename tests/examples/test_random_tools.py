"""Tests for lazytools_examples.random_tools."""

import pytest
from lazytools_examples import random_tools as rt


def test_roll_dice() -> None:
    result = rt.roll_dice("3d6+2", seed=7)
    assert len(result["rolls"]) == 3 and all(1 <= x <= 6 for x in result["rolls"])
    assert result["total"] == sum(result["rolls"]) + 2
    assert rt.roll_dice("3d6+2", seed=7) == result
    assert rt.roll_dice("d20-1")["modifier"] == -1
    with pytest.raises(ValueError, match="invalid dice notation"):
        rt.roll_dice("roll two dice")
    with pytest.raises(ValueError, match="1-1000 dice"):
        rt.roll_dice("5000d6")


def test_random_number() -> None:
    ints = rt.random_number(1, 10, count=200, seed=3)
    assert all(isinstance(x, int) and 1 <= x <= 10 for x in ints) and len(set(ints)) == 10
    floats = rt.random_number(0.5, 0.75, count=20, integer=False)
    assert all(0.5 <= x <= 0.75 for x in floats)
    assert rt.random_number(1, 100, count=5, seed=42) == rt.random_number(1, 100, count=5, seed=42)
    with pytest.raises(ValueError, match="greater than maximum"):
        rt.random_number(5, 1)
    with pytest.raises(ValueError, match="no whole number"):
        rt.random_number(1.2, 1.8)


def test_pick_random_items() -> None:
    picked = rt.pick_random_items(["a", "b", "c", "d"], count=3)
    assert len(set(picked)) == 3 and set(picked) <= {"a", "b", "c", "d"}
    assert rt.pick_random_items(["x"], count=5, allow_repeats=True) == ["x"] * 5
    with pytest.raises(ValueError, match="cannot pick 3 distinct"):
        rt.pick_random_items(["a", "b"], count=3)


def test_shuffle_items() -> None:
    items = [str(i) for i in range(50)]
    shuffled = rt.shuffle_items(items, seed=1)
    assert sorted(shuffled) == sorted(items) and shuffled != items
    assert rt.shuffle_items(items, seed=1) == shuffled
    assert items == [str(i) for i in range(50)]  # input is not modified
