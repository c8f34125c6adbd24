"""Cron expressions: compute the next run times and describe a schedule in words."""

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated, Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field

__all__ = ["cron_next_runs", "describe_cron"]

Expression = Annotated[str, Field(description="Standard 5-field cron expression 'minute hour day-of-month month day-of-week', e.g. '*/15 9-17 * * mon-fri', or @daily/@hourly/@weekly/@monthly/@yearly.")]

_MACROS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
_DAY_NAMES = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
# (name, lowest, highest, textual aliases mapped onto numbers)
_FIELDS = [
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {name: i + 1 for i, name in enumerate(_MONTHS)}),
    ("day of week", 0, 7, {name: i for i, name in enumerate(_DAYS)}),
]
# Searching further than this finds nothing new (leap-day schedules recur within 8 years).
_SEARCH_DAYS = 366 * 9


class Schedule(NamedTuple):
    minutes: set[int]
    hours: set[int]
    days: set[int]
    months: set[int]
    weekdays: set[int]
    days_restricted: bool
    weekdays_restricted: bool


def _value(token: str, low: int, high: int, aliases: dict[str, int], field: str) -> int:
    number = aliases.get(token.lower()) if not token.isdigit() else int(token)
    if number is None or not low <= number <= high:
        raise ValueError(f"invalid {field} value {token!r} (allowed {low}-{high})")
    return number


def _parse_field(text: str, low: int, high: int, aliases: dict[str, int], field: str) -> set[int]:
    values: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text.isdigit() and int(step_text) > 0 else None
        if step_text and step is None:
            raise ValueError(f"invalid step {step_text!r} in {field} field")
        if base == "*":
            start, end = low, high
        elif "-" in base:
            a, b = base.split("-", 1)
            start, end = _value(a, low, high, aliases, field), _value(b, low, high, aliases, field)
            if start > end:
                raise ValueError(f"range {base!r} in {field} field runs backwards")
        else:
            start = _value(base, low, high, aliases, field)
            end = high if step else start
        values.update(range(start, end + 1, step or 1))
    return values


def _parse(expression: str) -> Schedule:
    text = _MACROS.get(expression.strip().lower(), expression.strip())
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(f"cron expression needs 5 fields (minute hour day month weekday), got {len(fields)}")
    parsed = [_parse_field(f, lo, hi, al, name) for f, (name, lo, hi, al) in zip(fields, _FIELDS)]
    weekdays = {d % 7 for d in parsed[4]}  # both 0 and 7 mean Sunday
    return Schedule(parsed[0], parsed[1], parsed[2], parsed[3], weekdays, fields[2] != "*", fields[4] != "*")


def _day_matches(s: Schedule, day: datetime) -> bool:
    if day.month not in s.months:
        return False
    in_dom, in_dow = day.day in s.days, (day.weekday() + 1) % 7 in s.weekdays
    # Classic cron: when both day fields are restricted, either one matching is enough.
    if s.days_restricted and s.weekdays_restricted:
        return in_dom or in_dow
    return in_dom and in_dow


def cron_next_runs(
    expression: Expression,
    start: Annotated[str, Field(description="ISO date-time to search from (exclusive); empty means now.")] = "",
    count: Annotated[int, Field(description="How many upcoming run times to list.", ge=1, le=100)] = 5,
    zone: Annotated[str, Field(description="IANA time zone the schedule runs in.")] = "UTC",
) -> dict[str, Any]:
    """List the next times a cron schedule will run, starting from now or a given date-time."""
    if not 1 <= count <= 100:
        raise ValueError("count must be between 1 and 100")
    schedule = _parse(expression)
    try:
        if len(zone) > 100:
            raise ValueError("zone name is too long")
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {zone[:100]!r}") from None
    try:
        begin = datetime.fromisoformat(start.strip()) if start.strip() else datetime.now(tz)
    except ValueError:
        raise ValueError(f"cannot parse start {start!r}; use ISO 8601 like '2024-05-01T08:00'") from None
    begin = (begin.replace(tzinfo=tz) if begin.tzinfo is None else begin.astimezone(tz)).replace(second=0, microsecond=0)
    runs: list[str] = []
    day = begin.replace(hour=0, minute=0)
    for _ in range(_SEARCH_DAYS):
        if _day_matches(schedule, day):
            for hour in sorted(schedule.hours):
                for minute in sorted(schedule.minutes):
                    moment = day.replace(hour=hour, minute=minute)
                    # Skip wall-clock times that do not exist because of a DST jump.
                    if moment <= begin or moment.astimezone(ZoneInfo("UTC")).astimezone(tz).replace(tzinfo=None) != moment.replace(tzinfo=None):
                        continue
                    runs.append(moment.isoformat())
                    if len(runs) == count:
                        return {"expression": expression, "zone": zone, "next_runs": runs}
        day = (day + timedelta(days=1)).replace(hour=0, minute=0)
    if not runs:
        raise ValueError(f"cron expression {expression!r} never fires (check day and month combination)")
    return {"expression": expression, "zone": zone, "next_runs": runs}


def _phrase(values: set[int], low: int, high: int, unit: str, names: list[str] | None = None) -> str:
    """Words for one field: '' when unrestricted, 'every 15 minutes' for steps, else a list."""
    ordered = sorted(values)
    if ordered == list(range(low, high + 1)):
        return ""
    step = ordered[1] - ordered[0] if len(ordered) > 2 else 0
    if step > 1 and ordered[0] == low and ordered == list(range(low, high + 1, step)):
        return f"every {step} {unit}s"
    text = _compress(ordered, lambda v: names[v - low] if names else str(v))
    return text if names else f"{unit}{'s' if len(ordered) > 1 else ''} {text}"


def _compress(ordered: list[int], label: Callable[[int], str]) -> str:
    """Join sorted values, writing runs of three or more consecutive values as 'first-last'."""
    runs: list[list[int]] = []
    for value in ordered:
        if runs and value == runs[-1][-1] + 1:
            runs[-1].append(value)
        else:
            runs.append([value])
    pieces = []
    for run in runs:
        if len(run) >= 3:
            pieces.append(f"{label(run[0])}-{label(run[-1])}")
        else:
            pieces.extend(label(v) for v in run)
    return ", ".join(pieces)


def describe_cron(expression: Expression) -> dict[str, Any]:
    """Explain a cron expression in plain English, e.g. '*/15 9-17 * * 1-5' -> every 15 minutes, hours 9-17, Monday to Friday."""
    s = _parse(expression)
    if len(s.minutes) == 1 and len(s.hours) == 1:
        parts = [f"at {min(s.hours):02d}:{min(s.minutes):02d}"]
    else:
        minute = _phrase(s.minutes, 0, 59, "minute")
        hour = _phrase(s.hours, 0, 23, "hour")
        parts = [f"at {minute}" if minute.startswith("minute") else minute or "every minute"]
        if hour:
            parts.append(f"during {hour}" if hour.startswith("hour") else hour)
    if s.days_restricted:
        parts.append(f"on day of month {_compress(sorted(s.days), str)}")
    if s.weekdays_restricted:
        days = _compress(sorted(s.weekdays), lambda d: _DAY_NAMES[d])
        parts.append(f"or on {days}" if s.days_restricted else f"on {days}")
    months = _phrase(s.months, 1, 12, "month", _MONTH_NAMES)
    if months:
        parts.append(f"in {months}")
    return {
        "description": ", ".join(parts),
        "fields": {
            "minutes": sorted(s.minutes), "hours": sorted(s.hours), "days_of_month": sorted(s.days),
            "months": sorted(s.months), "days_of_week": [_DAY_NAMES[d] for d in sorted(s.weekdays)],
        },
    }
