"""Tests for lazytools_examples.units."""

from typing import get_args

import pytest
from lazytools_examples import units


def test_unit_literals_match_tables() -> None:
    pairs = [
        (units.LengthUnit, units.LENGTH), (units.MassUnit, units.MASS), (units.DataUnit, units.DATA_SIZE),
        (units.SpeedUnit, units.SPEED), (units.VolumeUnit, units.VOLUME), (units.AreaUnit, units.AREA),
        (units.DurationUnit, units.DURATION), (units.PressureUnit, units.PRESSURE), (units.EnergyUnit, units.ENERGY),
    ]
    for literal, table in pairs:
        assert set(get_args(literal)) == set(table)
    assert set(get_args(units.TemperatureUnit)) == set(units.TEMPERATURE_UNITS)


def test_convert_length() -> None:
    assert units.convert_length(1, "mi", "km")["result"] == 1.609344
    assert units.convert_length(12, "in", "ft")["result"] == 1.0
    with pytest.raises(ValueError, match="unknown length unit"):
        units.convert_length(1, "parsec", "m")  # type: ignore[arg-type]


def test_convert_mass() -> None:
    assert units.convert_mass(1, "kg", "lb")["result"] == pytest.approx(2.20462262185)
    assert units.convert_mass(16, "oz", "lb")["result"] == 1.0


def test_convert_temperature() -> None:
    assert units.convert_temperature(100, "C", "F")["result"] == 212
    assert units.convert_temperature(-40, "C", "F")["result"] == -40
    assert units.convert_temperature(0, "K", "C")["result"] == -273.15
    assert units.convert_temperature(491.67, "R", "C")["result"] == 0
    with pytest.raises(ValueError, match="below absolute zero"):
        units.convert_temperature(-300, "C", "K")


def test_convert_data_size() -> None:
    assert units.convert_data_size(1, "GiB", "B")["result"] == 1073741824
    assert units.convert_data_size(1, "GB", "MB")["result"] == 1000
    assert units.convert_data_size(100, "Mbit", "MB")["result"] == 12.5


def test_convert_speed() -> None:
    assert units.convert_speed(100, "km/h", "mph")["result"] == pytest.approx(62.1371192237)
    assert units.convert_speed(1, "knot", "km/h")["result"] == 1.852


def test_convert_volume() -> None:
    assert units.convert_volume(1, "gallon", "l")["result"] == 3.785411784
    assert units.convert_volume(3, "tsp", "tbsp")["result"] == 1.0


def test_convert_area() -> None:
    assert units.convert_area(1, "ha", "m2")["result"] == 10_000
    assert units.convert_area(640, "acre", "mi2")["result"] == 1.0


def test_convert_duration() -> None:
    assert units.convert_duration(1, "day", "min")["result"] == 1440
    assert units.convert_duration(1, "year", "day")["result"] == 365.2425


def test_convert_pressure() -> None:
    assert units.convert_pressure(1, "atm", "kPa")["result"] == 101.325
    assert units.convert_pressure(1, "bar", "psi")["result"] == pytest.approx(14.5037738)


def test_convert_energy() -> None:
    assert units.convert_energy(1, "kWh", "kJ")["result"] == 3600
    assert units.convert_energy(1, "kcal", "J")["result"] == 4184


def test_convert_units_generic() -> None:
    result = units.convert_units(5, "miles", "km")
    assert result["result"] == 8.04672 and result["dimension"] == "length"
    assert units.convert_units(212, "Fahrenheit", "celsius")["result"] == 100
    assert units.convert_units(1, "mb", "KB")["result"] == 1000
    with pytest.raises(ValueError, match="cannot convert mass"):
        units.convert_units(1, "kg", "km")
    with pytest.raises(ValueError, match="unknown unit"):
        units.convert_units(1, "furlongs", "m")
    with pytest.raises(ValueError, match="finite"):
        units.convert_units(float("inf"), "m", "km")


def test_format_byte_size() -> None:
    assert units.format_byte_size(1536, binary=True) == "1.5 KiB"
    assert units.format_byte_size(1_500_000) == "1.5 MB"
    assert units.format_byte_size(512) == "512 B"
    with pytest.raises(ValueError, match="non-negative"):
        units.format_byte_size(-1)
