"""Everyday money maths: compound interest, loan payments, discounts and bill splitting."""

from typing import Annotated, Any

from pydantic import Field

from ._common import ensure_finite

__all__ = ["compound_interest", "loan_payment", "apply_discount", "split_bill"]


def compound_interest(
    principal: Annotated[float, Field(description="Starting amount of money.", ge=0)],
    annual_rate_percent: Annotated[float, Field(description="Yearly interest rate in percent, e.g. 5 for 5%.")],
    years: Annotated[float, Field(description="How many years the money grows.", ge=0, le=1000)],
    compounds_per_year: Annotated[int, Field(description="Compounding periods per year (12 = monthly).", ge=1, le=366)] = 12,
    monthly_contribution: Annotated[float, Field(description="Amount added at the end of every month.", ge=0)] = 0.0,
) -> dict[str, float]:
    """Calculate the future value of savings with compound interest and optional monthly contributions."""
    if principal < 0 or monthly_contribution < 0:
        raise ValueError("principal and monthly_contribution must not be negative")
    if not 0 <= years <= 1000 or not 1 <= compounds_per_year <= 366:
        raise ValueError("years must be 0-1000 and compounds_per_year 1-366")
    rate = annual_rate_percent / 100
    if rate <= -1:
        raise ValueError("annual_rate_percent must be greater than -100")
    months = round(years * 12)
    try:
        future = principal * (1 + rate / compounds_per_year) ** (compounds_per_year * years)
        if monthly_contribution:
            # Each contribution grows at the equivalent monthly rate from its deposit date.
            monthly_rate = (1 + rate / compounds_per_year) ** (compounds_per_year / 12) - 1
            if monthly_rate == 0:
                future += monthly_contribution * months
            else:
                future += monthly_contribution * (((1 + monthly_rate) ** months - 1) / monthly_rate)
    except OverflowError:
        raise ValueError("the result is too large to represent") from None
    future = ensure_finite(future, "the future value")
    contributed = ensure_finite(principal + monthly_contribution * months, "the total contributed")
    return {"future_value": round(future, 2), "total_contributed": round(contributed, 2), "interest_earned": round(future - contributed, 2)}


def loan_payment(
    principal: Annotated[float, Field(description="Amount borrowed.", gt=0)],
    annual_rate_percent: Annotated[float, Field(description="Yearly interest rate in percent.", ge=0)],
    years: Annotated[float, Field(description="Loan term in years.", gt=0, le=100)],
) -> dict[str, float]:
    """Calculate the monthly payment, total paid and total interest of an amortized loan or mortgage."""
    if principal <= 0 or not 0 < years <= 100 or annual_rate_percent < 0:
        raise ValueError("principal must be positive, years between 0 and 100, and the rate not negative")
    months = max(1, round(years * 12))
    monthly_rate = annual_rate_percent / 100 / 12
    if monthly_rate == 0:
        payment = principal / months
    else:
        payment = principal * monthly_rate / (1 - (1 + monthly_rate) ** -months)
    total = payment * months
    return {"monthly_payment": round(payment, 2), "number_of_payments": months, "total_paid": round(total, 2), "total_interest": round(total - principal, 2)}


def apply_discount(
    price: Annotated[float, Field(description="Original price.", ge=0)],
    discount_percent: Annotated[float, Field(description="Discount in percent, e.g. 20 for 20% off.", ge=0, le=100)] = 0.0,
    tax_percent: Annotated[float, Field(description="Sales tax / VAT in percent added after the discount.", ge=0)] = 0.0,
) -> dict[str, float]:
    """Apply a percentage discount and optional sales tax to a price and show the savings."""
    if price < 0 or not 0 <= discount_percent <= 100 or tax_percent < 0:
        raise ValueError("price and tax must not be negative and the discount must be 0-100%")
    discounted = price * (1 - discount_percent / 100)
    tax = discounted * tax_percent / 100
    return {"discounted_price": round(discounted, 2), "savings": round(price - discounted, 2), "tax": round(tax, 2), "final_price": round(discounted + tax, 2)}


def split_bill(
    total: Annotated[float, Field(description="Bill amount before tip.", ge=0)],
    people: Annotated[int, Field(description="Number of people sharing the bill.", ge=1, le=1000)],
    tip_percent: Annotated[float, Field(description="Tip in percent of the bill.", ge=0, le=100)] = 0.0,
) -> dict[str, Any]:
    """Split a restaurant bill with an optional tip evenly between people, distributing leftover cents fairly."""
    if total < 0 or not 1 <= people <= 1000 or not 0 <= tip_percent <= 100:
        raise ValueError("total must not be negative, people must be 1-1000 and tip 0-100%")
    if not total < 1e15:  # also refuses NaN and Infinity; cents stay exact in a float below this
        raise ValueError("total must be a finite amount below 10^15")
    grand_cents = round(total * (1 + tip_percent / 100) * 100)
    base, extra = divmod(grand_cents, people)
    # The first `extra` people pay one cent more so the shares add up exactly.
    shares = [(base + (1 if i < extra else 0)) / 100 for i in range(people)]
    return {"tip": round(grand_cents / 100 - total, 2), "total_with_tip": grand_cents / 100, "per_person": round(grand_cents / people / 100, 2), "shares": shares}
