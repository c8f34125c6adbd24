"""Dates, times and time zones using `datetime` and `zoneinfo`."""

import calendar
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import Field

__all__ = [
    "current_time_in_zone",
    "convert_timezone",
    "add_to_date",
    "days_between_dates",
    "weekday_of_date",
    "parse_datetime",
    "unix_to_iso",
    "iso_to_unix",
    "list_timezones",
    "month_calendar",
]

Zone = Annotated[str, Field(description="IANA time zone name, e.g. 'Europe/Paris', 'America/New_York' or 'UTC'.")]
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _zone(name: str) -> ZoneInfo:
    if len(name) > 100:  # the longest IANA name has 32 characters; long keys made zoneinfo recurse deeply
        raise ValueError("unknown time zone: the name is too long; use an IANA name like 'Europe/Berlin'")
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}; use an IANA name like 'Europe/Berlin'") from None


def _parse(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"cannot parse {text!r}; use ISO 8601 like '2024-03-15' or '2024-03-15T14:30:00+01:00'") from None


def _parse_date(text: str) -> date:
    return _parse(text).date()


def _describe(moment: datetime) -> dict[str, Any]:
    offset = moment.utcoffset()
    return {
        "iso": moment.isoformat(),
        "date": moment.date().isoformat(),
        "time": moment.strftime("%H:%M:%S"),
        "weekday": _WEEKDAYS[moment.weekday()],
        "utc_offset": moment.strftime("%z") if offset is not None else None,
        "zone_abbreviation": moment.tzname(),
        "is_dst": bool(moment.dst()) if moment.dst() is not None else None,
    }


def current_time_in_zone(zone: Zone = "UTC") -> dict[str, Any]:
    """Get the current date and time in a time zone (what time is it now in Tokyo, New York, ...)."""
    now = datetime.now(_zone(zone))
    return {"zone": zone, **_describe(now), "unix_timestamp": int(now.timestamp())}


def convert_timezone(
    datetime_text: Annotated[str, Field(description="ISO date-time, e.g. '2024-06-01T09:00'. A UTC offset in the text takes precedence over from_zone.")],
    from_zone: Annotated[str, Field(description="IANA zone the time is in (used when the text has no offset).")],
    to_zone: Annotated[str, Field(description="IANA zone to convert to.")],
) -> dict[str, Any]:
    """Convert a date and time from one time zone to another, e.g. 9:00 in London to Tokyo time."""
    moment = _parse(datetime_text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_zone(from_zone))
    converted = moment.astimezone(_zone(to_zone))
    return {"from": _describe(moment), "to": _describe(converted), "to_zone": to_zone}


def _add_months(day: datetime, months: int) -> datetime:
    total = day.year * 12 + day.month - 1 + months
    year, month = divmod(total, 12)
    if not 1 <= year <= 9999:
        raise ValueError("resulting date is out of range")
    # Clamp to the month's last day so Jan 31 + 1 month gives Feb 28/29.
    last = calendar.monthrange(year, month + 1)[1]
    return day.replace(year=year, month=month + 1, day=min(day.day, last))


def add_to_date(
    start: Annotated[str, Field(description="ISO date or date-time to start from, e.g. '2024-01-31'.")],
    years: Annotated[int, Field(description="Years to add (negative to subtract).")] = 0,
    months: Annotated[int, Field(description="Months to add (negative to subtract).")] = 0,
    weeks: Annotated[int, Field(description="Weeks to add.")] = 0,
    days: Annotated[int, Field(description="Days to add.")] = 0,
    hours: Annotated[int, Field(description="Hours to add.")] = 0,
    minutes: Annotated[int, Field(description="Minutes to add.")] = 0,
) -> dict[str, Any]:
    """Add or subtract years, months, weeks, days, hours and minutes to a date or date-time."""
    moment = _parse(start)
    date_only = ":" not in start and "T" not in start.upper()
    try:
        moment = _add_months(moment, years * 12 + months)
        moment += timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes)
    except OverflowError:
        raise ValueError("resulting date is out of range") from None
    result = moment.date().isoformat() if date_only and not (hours or minutes) else moment.isoformat()
    return {"result": result, "weekday": _WEEKDAYS[moment.weekday()]}


def days_between_dates(
    start_date: Annotated[str, Field(description="First date, ISO format 'YYYY-MM-DD'.")],
    end_date: Annotated[str, Field(description="Second date, ISO format 'YYYY-MM-DD'.")],
) -> dict[str, Any]:
    """Count the days, weeks and business days (Mon-Fri) between two dates."""
    start, end = _parse_date(start_date), _parse_date(end_date)
    days = (end - start).days
    lo, hi = min(start, end), max(start, end)
    span = (hi - lo).days
    full_weeks, rest = divmod(span, 7)
    # Business days in [lo, hi): five per full week plus the weekdays in the remainder.
    business = full_weeks * 5 + sum(1 for i in range(rest) if (lo.weekday() + i) % 7 < 5)
    return {
        "days": days,
        "weeks": round(days / 7, 4),
        "business_days": business if days >= 0 else -business,
        "years_months_days": _ymd(lo, hi),
    }


def _ymd(lo: date, hi: date) -> dict[str, int]:
    months = (hi.year - lo.year) * 12 + hi.month - lo.month
    if hi.day < lo.day:
        months -= 1
    anchor = _add_months(datetime(lo.year, lo.month, lo.day), months).date()
    return {"years": months // 12, "months": months % 12, "days": (hi - anchor).days}


def weekday_of_date(
    date_text: Annotated[str, Field(description="Date in ISO format 'YYYY-MM-DD'.")],
) -> dict[str, Any]:
    """Find which day of the week a date falls on, plus its ISO week number, day of the year and quarter."""
    day = _parse_date(date_text)
    iso_year, iso_week, iso_weekday = day.isocalendar()
    return {
        "date": day.isoformat(),
        "weekday": _WEEKDAYS[day.weekday()],
        "iso_weekday": iso_weekday,
        "iso_week": iso_week,
        "iso_year": iso_year,
        "day_of_year": day.timetuple().tm_yday,
        "quarter": (day.month - 1) // 3 + 1,
        "is_leap_year": calendar.isleap(day.year),
        "is_weekend": iso_weekday >= 6,
    }


def parse_datetime(
    text: Annotated[str, Field(description="ISO 8601 date or date-time, e.g. '2024-03-15T14:30:00Z'.")],
) -> dict[str, Any]:
    """Parse and validate an ISO 8601 date/time string and break it into year, month, day, time and UTC offset."""
    moment = _parse(text)
    parts = {k: getattr(moment, k) for k in ("year", "month", "day", "hour", "minute", "second", "microsecond")}
    utc = moment.astimezone(UTC).isoformat() if moment.tzinfo else None
    return {**_describe(moment), "components": parts, "has_timezone": moment.tzinfo is not None, "utc": utc}


def unix_to_iso(
    timestamp: Annotated[float, Field(description="Unix timestamp in seconds (or milliseconds if unit='ms').")],
    zone: Zone = "UTC",
    unit: Annotated[Literal["s", "ms"], Field(description="'s' for seconds or 'ms' for milliseconds.")] = "s",
) -> dict[str, Any]:
    """Convert a Unix epoch timestamp to a readable ISO date-time in a time zone."""
    if unit not in ("s", "ms"):
        raise ValueError("unit must be 's' or 'ms'")
    seconds = timestamp / 1000 if unit == "ms" else timestamp
    try:
        moment = datetime.fromtimestamp(seconds, _zone(zone))
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"timestamp {timestamp} is out of range") from None
    return {"zone": zone, **_describe(moment)}


def iso_to_unix(
    datetime_text: Annotated[str, Field(description="ISO date-time; without an offset it is read in `zone`.")],
    zone: Zone = "UTC",
) -> dict[str, Any]:
    """Convert an ISO date-time to a Unix epoch timestamp in seconds and milliseconds."""
    moment = _parse(datetime_text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_zone(zone))
    seconds = moment.timestamp()
    return {"unix_seconds": int(seconds) if seconds.is_integer() else seconds, "unix_milliseconds": round(seconds * 1000)}


def list_timezones(
    contains: Annotated[str, Field(description="Case-insensitive filter, e.g. 'europe' or 'york'. Empty lists all.")] = "",
) -> list[str]:
    """List IANA time zone names, optionally filtered by a search string (find the zone name for a city or region)."""
    needle = contains.strip().lower().replace(" ", "_")
    return sorted(z for z in available_timezones() if needle in z.lower())


def month_calendar(
    year: Annotated[int, Field(description="Year, e.g. 2024.", ge=1, le=9999)],
    month: Annotated[int, Field(description="Month number 1-12.", ge=1, le=12)],
) -> dict[str, Any]:
    """Show a text calendar for a month, with its number of days and first weekday."""
    if not 1 <= month <= 12 or not 1 <= year <= 9999:
        raise ValueError("month must be 1-12 and year 1-9999")
    first_weekday, days = calendar.monthrange(year, month)
    return {
        "calendar": calendar.TextCalendar(calendar.MONDAY).formatmonth(year, month),
        "days_in_month": days,
        "first_weekday": _WEEKDAYS[first_weekday],
    }
