"""Tests for lazytools_examples.cron."""

from datetime import UTC, datetime

import pytest
from lazytools_examples import cron


def test_cron_next_runs_weekday_business_hours() -> None:
    runs = cron.cron_next_runs("*/15 9-17 * * mon-fri", start="2024-03-08T17:31", count=3)["next_runs"]
    assert runs == ["2024-03-08T17:45:00+00:00", "2024-03-11T09:00:00+00:00", "2024-03-11T09:15:00+00:00"]


def test_cron_next_runs_special_cases() -> None:
    leap = cron.cron_next_runs("0 0 29 2 *", start="2024-03-01", count=2)["next_runs"]
    assert leap == ["2028-02-29T00:00:00+00:00", "2032-02-29T00:00:00+00:00"]
    either_day = cron.cron_next_runs("0 12 15 * mon", start="2024-01-09", count=3)["next_runs"]
    assert [r[:10] for r in either_day] == ["2024-01-15", "2024-01-22", "2024-01-29"]
    paris = cron.cron_next_runs("30 2 * * *", start="2024-03-30T03:00", count=2, zone="Europe/Paris")["next_runs"]
    assert paris == ["2024-04-01T02:30:00+02:00", "2024-04-02T02:30:00+02:00"]  # 31 March 02:30 does not exist
    assert cron.cron_next_runs("@yearly", start="2024-06-01", count=1)["next_runs"] == ["2025-01-01T00:00:00+00:00"]


def test_cron_next_runs_defaults_to_now() -> None:
    before = datetime.now(UTC)
    runs = cron.cron_next_runs("* * * * *", count=2)["next_runs"]
    assert len(runs) == 2 and all(datetime.fromisoformat(r) > before.replace(second=0, microsecond=0) for r in runs)


@pytest.mark.parametrize(
    ("expression", "message"),
    [("61 * * * *", "invalid minute value"), ("* * * *", "needs 5 fields"), ("*/0 * * * *", "invalid step"),
     ("0 0 31 2 *", "never fires"), ("0 0 * * funday", "invalid day of week"), ("5-1 * * * *", "runs backwards")],
)
def test_cron_next_runs_errors(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cron.cron_next_runs(expression, start="2024-01-01")


def test_describe_cron() -> None:
    assert cron.describe_cron("*/15 9-17 * * mon-fri")["description"] == "every 15 minutes, during hours 9-17, on Monday-Friday"
    assert cron.describe_cron("@daily")["description"] == "at 00:00"
    assert cron.describe_cron("30 8 1 jan,jul 0")["description"] == "at 08:30, on day of month 1, or on Sunday, in January, July"
    fields = cron.describe_cron("0 0 * * 7")["fields"]
    assert fields["days_of_week"] == ["Sunday"] and fields["hours"] == [0]
