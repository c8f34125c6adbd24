"""Tests for lazytools_examples.dates (only loosely dependent on the current time)."""

import time

import pytest
from lazytools_examples import dates


def test_current_time_in_zone() -> None:
    before = time.time()
    result = dates.current_time_in_zone("Asia/Tokyo")
    assert result["utc_offset"] == "+0900"
    assert before - 2 <= result["unix_timestamp"] <= time.time() + 2
    with pytest.raises(ValueError, match="unknown time zone"):
        dates.current_time_in_zone("Mars/Olympus")


def test_convert_timezone() -> None:
    result = dates.convert_timezone("2024-06-01T09:00", "Europe/London", "Asia/Tokyo")
    assert result["to"]["iso"] == "2024-06-01T17:00:00+09:00"
    assert result["from"]["is_dst"] is True
    offset_wins = dates.convert_timezone("2024-01-01T00:00:00+00:00", "Asia/Tokyo", "America/New_York")
    assert offset_wins["to"]["iso"] == "2023-12-31T19:00:00-05:00"


def test_add_to_date() -> None:
    assert dates.add_to_date("2024-01-31", months=1)["result"] == "2024-02-29"
    assert dates.add_to_date("2024-03-01", days=-1) == {"result": "2024-02-29", "weekday": "Thursday"}
    assert dates.add_to_date("2024-01-01", years=1, weeks=1)["result"] == "2025-01-08"
    assert dates.add_to_date("2024-01-01", hours=36)["result"] == "2024-01-02T12:00:00"
    with pytest.raises(ValueError, match="out of range"):
        dates.add_to_date("9999-12-01", months=1)
    with pytest.raises(ValueError, match="cannot parse"):
        dates.add_to_date("01/02/2024", days=1)


def test_days_between_dates() -> None:
    assert dates.days_between_dates("2024-01-01", "2024-12-31")["days"] == 365
    week = dates.days_between_dates("2024-03-04", "2024-03-11")
    assert week["days"] == 7 and week["business_days"] == 5
    assert dates.days_between_dates("2024-03-11", "2024-03-04")["business_days"] == -5
    assert dates.days_between_dates("2020-02-15", "2024-03-20")["years_months_days"] == {"years": 4, "months": 1, "days": 5}


def test_weekday_of_date() -> None:
    info = dates.weekday_of_date("2024-02-29")
    assert info["weekday"] == "Thursday"
    assert (info["iso_week"], info["day_of_year"], info["quarter"]) == (9, 60, 1)
    assert info["is_leap_year"] is True and info["is_weekend"] is False


def test_parse_datetime() -> None:
    parsed = dates.parse_datetime("2024-03-15T14:30:00+02:00")
    assert parsed["components"]["hour"] == 14
    assert parsed["utc"] == "2024-03-15T12:30:00+00:00"
    assert dates.parse_datetime("2024-03-15")["has_timezone"] is False
    with pytest.raises(ValueError, match="ISO 8601"):
        dates.parse_datetime("next tuesday")


def test_unix_to_iso() -> None:
    assert dates.unix_to_iso(0)["iso"] == "1970-01-01T00:00:00+00:00"
    assert dates.unix_to_iso(1_700_000_000_000, unit="ms")["iso"] == "2023-11-14T22:13:20+00:00"
    assert dates.unix_to_iso(0, zone="America/New_York")["date"] == "1969-12-31"
    with pytest.raises(ValueError, match="out of range"):
        dates.unix_to_iso(1e20)


def test_iso_to_unix() -> None:
    assert dates.iso_to_unix("1970-01-02T00:00:00Z")["unix_seconds"] == 86400
    assert dates.iso_to_unix("2024-01-01T01:00", zone="Europe/Paris")["unix_seconds"] == 1_704_067_200
    assert dates.iso_to_unix("1970-01-01T00:00:00.5Z")["unix_milliseconds"] == 500


def test_list_timezones() -> None:
    zones = dates.list_timezones("new york")
    assert "America/New_York" in zones
    assert all("new_york" in z.lower() for z in zones)
    assert len(dates.list_timezones()) > 300


def test_month_calendar() -> None:
    cal = dates.month_calendar(2024, 2)
    assert cal["days_in_month"] == 29 and cal["first_weekday"] == "Thursday"
    assert "February 2024" in cal["calendar"]
    with pytest.raises(ValueError, match="month must be"):
        dates.month_calendar(2024, 13)
