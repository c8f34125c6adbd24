"""Tests for lazytools_examples.colors."""

import pytest
from lazytools_examples import colors


@pytest.mark.parametrize(
    ("source", "expected_hex"),
    [("#ff8800", "#ff8800"), ("#FFF", "#ffffff"), ("rgb(30, 144, 255)", "#1e90ff"), ("hsl(0, 100%, 50%)", "#ff0000"), ("navy", "#000080"), ("Dodger Blue", "#1e90ff")],
)
def test_convert_color_formats(source: str, expected_hex: str) -> None:
    assert colors.convert_color(source)["hex"] == expected_hex


def test_convert_color_details() -> None:
    result = colors.convert_color("#ff8800")
    assert result["rgb"] == [255, 136, 0] and result["css_rgb"] == "rgb(255, 136, 0)"
    assert result["hsl"] == [32.0, 100.0, 50.0]
    with pytest.raises(ValueError, match="cannot parse color"):
        colors.convert_color("blurple")
    with pytest.raises(ValueError, match="between 0 and 255"):
        colors.convert_color("rgb(300, 0, 0)")


def test_color_contrast_ratio() -> None:
    best = colors.color_contrast_ratio("black", "white")
    assert best["ratio"] == 21.0 and best["aaa_normal_text"] is True
    grey = colors.color_contrast_ratio("#777777", "#ffffff")
    assert grey["ratio"] == 4.48 and grey["aa_normal_text"] is False and grey["aa_large_text"] is True


def test_adjust_color_lightness() -> None:
    assert colors.adjust_color_lightness("#808080", -100) == "#000000"
    assert colors.adjust_color_lightness("#808080", 100) == "#ffffff"
    lighter = colors.adjust_color_lightness("hsl(210, 50%, 40%)", 20)
    assert colors.convert_color(lighter)["hsl"][2] == pytest.approx(60, abs=0.5)
    with pytest.raises(ValueError, match="between -100 and 100"):
        colors.adjust_color_lightness("#000", 150)


def test_mix_colors() -> None:
    assert colors.mix_colors("black", "white") == "#808080"
    assert colors.mix_colors("red", "blue", weight=0) == "#ff0000"
    assert colors.mix_colors("red", "blue", weight=1) == "#0000ff"


def test_color_palette() -> None:
    assert colors.color_palette("#ff0000") == ["#ff0000", "#00ffff"]
    assert colors.color_palette("#ff0000", "triadic") == ["#ff0000", "#00ff00", "#0000ff"]
    mono = colors.color_palette("#336699", "monochromatic")
    assert len(mono) == 5 and mono[2] == "#336699"
