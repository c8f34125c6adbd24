"""Tests for lazytools_examples.finance."""

import pytest
from lazytools_examples import finance


def test_compound_interest() -> None:
    assert finance.compound_interest(1000, 5, 10, compounds_per_year=1)["future_value"] == 1628.89
    saved = finance.compound_interest(0, 0, 1, monthly_contribution=100)
    assert saved == {"future_value": 1200.0, "total_contributed": 1200.0, "interest_earned": 0.0}
    with pytest.raises(ValueError, match="too large"):
        finance.compound_interest(1, 1e6, 1000, compounds_per_year=1)


def test_loan_payment() -> None:
    result = finance.loan_payment(200_000, 6, 30)
    assert result["monthly_payment"] == 1199.10 and result["number_of_payments"] == 360
    assert finance.loan_payment(1200, 0, 1)["monthly_payment"] == 100.0
    with pytest.raises(ValueError, match="principal must be positive"):
        finance.loan_payment(0, 5, 1)


def test_apply_discount() -> None:
    assert finance.apply_discount(100, 20, 10) == {"discounted_price": 80.0, "savings": 20.0, "tax": 8.0, "final_price": 88.0}
    with pytest.raises(ValueError, match="0-100%"):
        finance.apply_discount(100, 120)


def test_split_bill() -> None:
    result = finance.split_bill(100, 3)
    assert result["shares"] == [33.34, 33.33, 33.33]
    assert round(sum(result["shares"]), 2) == 100.0
    assert finance.split_bill(50, 2, tip_percent=20)["total_with_tip"] == 60.0
    with pytest.raises(ValueError, match="people"):
        finance.split_bill(10, 0)
