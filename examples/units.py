"""Unit conversion: length, mass, temperature, data size, speed, volume, area, time, pressure, energy."""

import math
from typing import Annotated, Any, Literal

from pydantic import Field

from ._common import ensure_finite, quick

__all__ = [
    "convert_length",
    "convert_mass",
    "convert_temperature",
    "convert_data_size",
    "convert_speed",
    "convert_volume",
    "convert_area",
    "convert_duration",
    "convert_pressure",
    "convert_energy",
    "convert_units",
    "format_byte_size",
]

# Factors convert one unit into the dimension's base unit (m, kg, byte, m/s, L, m², s, Pa, J).
LENGTH = {"nm": 1e-9, "um": 1e-6, "mm": 1e-3, "cm": 1e-2, "m": 1.0, "km": 1e3,
          "in": 0.0254, "ft": 0.3048, "yd": 0.9144, "mi": 1609.344, "nmi": 1852.0}
MASS = {"mg": 1e-6, "g": 1e-3, "kg": 1.0, "t": 1e3, "oz": 0.028349523125, "lb": 0.45359237,
        "st": 6.35029318, "us_ton": 907.18474, "long_ton": 1016.0469088}
DATA_SIZE = {"bit": 0.125, "Kbit": 125.0, "Mbit": 125e3, "Gbit": 125e6, "B": 1.0, "KB": 1e3, "MB": 1e6,
             "GB": 1e9, "TB": 1e12, "PB": 1e15, "KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3,
             "TiB": 1024.0**4, "PiB": 1024.0**5}
SPEED = {"m/s": 1.0, "km/h": 1 / 3.6, "mph": 0.44704, "knot": 1852 / 3600, "ft/s": 0.3048}
VOLUME = {"ml": 1e-3, "cl": 1e-2, "dl": 0.1, "l": 1.0, "m3": 1e3, "cm3": 1e-3, "in3": 0.016387064,
          "ft3": 28.316846592, "tsp": 0.00492892159375, "tbsp": 0.01478676478125, "fl_oz": 0.0295735295625,
          "cup": 0.2365882365, "pint": 0.473176473, "quart": 0.946352946, "gallon": 3.785411784,
          "imp_pint": 0.56826125, "imp_gallon": 4.54609}
AREA = {"mm2": 1e-6, "cm2": 1e-4, "m2": 1.0, "km2": 1e6, "ha": 1e4, "in2": 0.00064516, "ft2": 0.09290304,
        "yd2": 0.83612736, "acre": 4046.8564224, "mi2": 2589988.110336}
# Months and years use the mean Gregorian calendar length.
DURATION = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "day": 86400.0,
            "week": 604800.0, "month": 2629746.0, "year": 31556952.0}
PRESSURE = {"Pa": 1.0, "hPa": 100.0, "kPa": 1e3, "MPa": 1e6, "bar": 1e5, "mbar": 100.0, "atm": 101325.0,
            "psi": 6894.757293168, "mmHg": 133.322387415, "inHg": 3386.389}
ENERGY = {"J": 1.0, "kJ": 1e3, "MJ": 1e6, "cal": 4.184, "kcal": 4184.0, "Wh": 3600.0, "kWh": 3.6e6,
          "BTU": 1055.05585262, "eV": 1.602176634e-19}
TEMPERATURE_UNITS = ("C", "F", "K", "R")

TABLES: dict[str, dict[str, float]] = {
    "length": LENGTH, "mass": MASS, "data_size": DATA_SIZE, "speed": SPEED, "volume": VOLUME,
    "area": AREA, "duration": DURATION, "pressure": PRESSURE, "energy": ENERGY,
}

LengthUnit = Literal["nm", "um", "mm", "cm", "m", "km", "in", "ft", "yd", "mi", "nmi"]
MassUnit = Literal["mg", "g", "kg", "t", "oz", "lb", "st", "us_ton", "long_ton"]
DataUnit = Literal["bit", "Kbit", "Mbit", "Gbit", "B", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "PiB"]
SpeedUnit = Literal["m/s", "km/h", "mph", "knot", "ft/s"]
VolumeUnit = Literal["ml", "cl", "dl", "l", "m3", "cm3", "in3", "ft3", "tsp", "tbsp", "fl_oz", "cup", "pint",
                     "quart", "gallon", "imp_pint", "imp_gallon"]
AreaUnit = Literal["mm2", "cm2", "m2", "km2", "ha", "in2", "ft2", "yd2", "acre", "mi2"]
DurationUnit = Literal["ns", "us", "ms", "s", "min", "h", "day", "week", "month", "year"]
PressureUnit = Literal["Pa", "hPa", "kPa", "MPa", "bar", "mbar", "atm", "psi", "mmHg", "inHg"]
EnergyUnit = Literal["J", "kJ", "MJ", "cal", "kcal", "Wh", "kWh", "BTU", "eV"]
TemperatureUnit = Literal["C", "F", "K", "R"]

Value = Annotated[float, Field(description="The amount to convert.")]
FROM_UNIT = Field(description="Unit the value is given in.")
TO_UNIT = Field(description="Unit to convert the value into.")

# Common spelled-out names a user (or model) may type for the generic converter.
_ALIASES = {
    "meter": "m", "metre": "m", "kilometer": "km", "kilometre": "km", "centimeter": "cm", "centimetre": "cm",
    "millimeter": "mm", "millimetre": "mm", "inch": "in", "foot": "ft", "feet": "ft", "yard": "yd",
    "mile": "mi", "gram": "g", "kilogram": "kg", "kilo": "kg", "tonne": "t", "ounce": "oz", "pound": "lb",
    "lbs": "lb", "stone": "st", "byte": "B", "kph": "km/h", "knots": "knot", "liter": "l", "litre": "l",
    "milliliter": "ml", "millilitre": "ml", "gal": "gallon", "hectare": "ha", "acres": "acre",
    "second": "s", "sec": "s", "minute": "min", "hour": "h", "hr": "h", "days": "day", "weeks": "week",
    "months": "month", "years": "year", "celsius": "C", "fahrenheit": "F", "kelvin": "K", "rankine": "R",
    "joule": "J", "calorie": "cal", "kilocalorie": "kcal", "°c": "C", "°f": "F",
}


def _tidy(number: float) -> float:
    # 12 significant digits hides binary float noise such as 0.30000000000000004.
    return float(f"{number:.12g}")


def _linear(value: float, from_unit: str, to_unit: str, table: dict[str, float], dimension: str) -> dict[str, Any]:
    for unit in (from_unit, to_unit):
        if unit not in table:
            raise ValueError(f"unknown {dimension} unit {unit!r}; known units: {', '.join(table)}")
    if not math.isfinite(value):
        raise ValueError("value must be a finite number")
    result = value * table[from_unit] / table[to_unit]
    return {"value": value, "from_unit": from_unit, "to_unit": to_unit, "result": _tidy(result)}


@quick
def convert_length(
    value: Value, from_unit: Annotated[LengthUnit, FROM_UNIT], to_unit: Annotated[LengthUnit, TO_UNIT]
) -> dict[str, Any]:
    """Convert a length or distance between metric and imperial units (mm, cm, m, km, inches, feet, yards, miles, nautical miles)."""
    return _linear(value, from_unit, to_unit, LENGTH, "length")


@quick
def convert_mass(
    value: Value, from_unit: Annotated[MassUnit, FROM_UNIT], to_unit: Annotated[MassUnit, TO_UNIT]
) -> dict[str, Any]:
    """Convert a weight or mass between grams, kilograms, tonnes, ounces, pounds and stone."""
    return _linear(value, from_unit, to_unit, MASS, "mass")


@quick
def convert_data_size(
    value: Value, from_unit: Annotated[DataUnit, FROM_UNIT], to_unit: Annotated[DataUnit, TO_UNIT]
) -> dict[str, Any]:
    """Convert a data or file size between bits, bytes, KB/MB/GB/TB (decimal) and KiB/MiB/GiB/TiB (binary)."""
    return _linear(value, from_unit, to_unit, DATA_SIZE, "data size")


@quick
def convert_speed(
    value: Value, from_unit: Annotated[SpeedUnit, FROM_UNIT], to_unit: Annotated[SpeedUnit, TO_UNIT]
) -> dict[str, Any]:
    """Convert a speed between m/s, km/h, miles per hour (mph), knots and ft/s."""
    return _linear(value, from_unit, to_unit, SPEED, "speed")


@quick
def convert_volume(
    value: Value, from_unit: Annotated[VolumeUnit, FROM_UNIT], to_unit: Annotated[VolumeUnit, TO_UNIT]
) -> dict[str, Any]:
    """Convert a volume between liters, milliliters, cubic meters, US cups, teaspoons, tablespoons, fluid ounces, pints, gallons."""
    return _linear(value, from_unit, to_unit, VOLUME, "volume")


@quick
def convert_area(
    value: Value, from_unit: Annotated[AreaUnit, FROM_UNIT], to_unit: Annotated[AreaUnit, TO_UNIT]
) -> dict[str, Any]:
    """Convert an area between square meters, square kilometers, hectares, acres, square feet and square miles."""
    return _linear(value, from_unit, to_unit, AREA, "area")


@quick
def convert_duration(
    value: Value, from_unit: Annotated[DurationUnit, FROM_UNIT], to_unit: Annotated[DurationUnit, TO_UNIT]
) -> dict[str, Any]:
    """Convert a time duration between nanoseconds, milliseconds, seconds, minutes, hours, days, weeks, months and years."""
    return _linear(value, from_unit, to_unit, DURATION, "duration")


@quick
def convert_pressure(
    value: Value, from_unit: Annotated[PressureUnit, FROM_UNIT], to_unit: Annotated[PressureUnit, TO_UNIT]
) -> dict[str, Any]:
    """Convert a pressure between pascal, hPa, kPa, bar, atmospheres, psi and mmHg."""
    return _linear(value, from_unit, to_unit, PRESSURE, "pressure")


@quick
def convert_energy(
    value: Value, from_unit: Annotated[EnergyUnit, FROM_UNIT], to_unit: Annotated[EnergyUnit, TO_UNIT]
) -> dict[str, Any]:
    """Convert energy between joules, kilojoules, calories, kilocalories, watt-hours, kWh, BTU and electronvolts."""
    return _linear(value, from_unit, to_unit, ENERGY, "energy")


@quick
def convert_temperature(
    value: Value, from_unit: Annotated[TemperatureUnit, FROM_UNIT], to_unit: Annotated[TemperatureUnit, TO_UNIT]
) -> dict[str, Any]:
    """Convert a temperature between Celsius (C), Fahrenheit (F), Kelvin (K) and Rankine (R)."""
    if from_unit not in TEMPERATURE_UNITS or to_unit not in TEMPERATURE_UNITS:
        raise ValueError(f"temperature units must be one of {', '.join(TEMPERATURE_UNITS)}")
    to_kelvin = {"C": lambda v: v + 273.15, "F": lambda v: (v + 459.67) * 5 / 9, "K": lambda v: v, "R": lambda v: v * 5 / 9}
    from_kelvin = {"C": lambda k: k - 273.15, "F": lambda k: k * 9 / 5 - 459.67, "K": lambda k: k, "R": lambda k: k * 9 / 5}
    kelvin = ensure_finite(to_kelvin[from_unit](value), "the temperature in kelvin")
    if kelvin < -1e-9:
        raise ValueError(f"{value} {from_unit} is below absolute zero")
    return {"value": value, "from_unit": from_unit, "to_unit": to_unit, "result": _tidy(ensure_finite(from_kelvin[to_unit](kelvin), "the result"))}


def _resolve_unit(name: str) -> tuple[str, str]:
    candidates = [name.strip(), _ALIASES.get(name.strip().lower(), "")]
    stripped = name.strip().lower()
    if stripped.endswith("s") and stripped[:-1] in _ALIASES:
        candidates.append(_ALIASES[stripped[:-1]])
    for candidate in candidates:
        if candidate in TEMPERATURE_UNITS:
            return "temperature", candidate
        for dimension, table in TABLES.items():
            if candidate in table:
                return dimension, candidate
    # Fall back to a case-insensitive match only when it is unambiguous (MB vs Mb matters).
    matches = [(d, u) for d, t in TABLES.items() for u in t if u.lower() == stripped]
    matches += [("temperature", u) for u in TEMPERATURE_UNITS if u.lower() == stripped]
    if len(matches) == 1:
        return matches[0]
    raise ValueError(f"unknown unit {name!r}")


def convert_units(
    value: Value,
    from_unit: Annotated[str, Field(description="Source unit symbol or name, e.g. 'km', 'miles', 'lb', 'GiB', 'celsius'.")],
    to_unit: Annotated[str, Field(description="Target unit of the same kind, e.g. 'mi', 'kg', 'MB', 'F'.")],
) -> dict[str, Any]:
    """Convert a quantity between any two units of the same kind (length, mass, volume, temperature, ...) given by name."""
    from_dim, from_sym = _resolve_unit(from_unit)
    to_dim, to_sym = _resolve_unit(to_unit)
    if from_dim != to_dim:
        raise ValueError(f"cannot convert {from_dim} ({from_sym}) to {to_dim} ({to_sym})")
    if from_dim == "temperature":
        result = convert_temperature(value, from_sym, to_sym)  # type: ignore[arg-type]
    else:
        result = _linear(value, from_sym, to_sym, TABLES[from_dim], from_dim)
    return {**result, "dimension": from_dim}


def format_byte_size(
    num_bytes: Annotated[float, Field(description="A size in bytes.", ge=0)],
    binary: Annotated[bool, Field(description="Use 1024-based units (KiB, MiB) instead of 1000-based (KB, MB).")] = False,
    decimals: Annotated[int, Field(description="Digits after the decimal point.", ge=0, le=6)] = 1,
) -> str:
    """Format a number of bytes as a human-readable size such as '1.5 GB' or '1.4 GiB'."""
    if num_bytes < 0 or not math.isfinite(num_bytes):
        raise ValueError("num_bytes must be a finite, non-negative number")
    step = 1024.0 if binary else 1000.0
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"] if binary else ["B", "KB", "MB", "GB", "TB", "PB", "EB"]
    size, index = float(num_bytes), 0
    while size >= step and index < len(units) - 1:
        size, index = size / step, index + 1
    return f"{int(size)} B" if index == 0 else f"{size:.{decimals}f} {units[index]}"
