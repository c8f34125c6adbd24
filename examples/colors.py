"""Color tools: hex/RGB/HSL conversion, WCAG contrast, lighten/darken, mixing, palettes."""

import colorsys
import re
from typing import Annotated, Any, Literal

from pydantic import Field

__all__ = ["convert_color", "color_contrast_ratio", "adjust_color_lightness", "mix_colors", "color_palette"]

Color = Annotated[str, Field(description="A color as '#1e90ff', '#fff', 'rgb(30, 144, 255)', 'hsl(210, 100%, 56%)' or a CSS name like 'navy'.")]
RGB = tuple[int, int, int]

_NAMED = {
    "black": "#000000", "white": "#ffffff", "red": "#ff0000", "lime": "#00ff00", "green": "#008000",
    "blue": "#0000ff", "yellow": "#ffff00", "cyan": "#00ffff", "aqua": "#00ffff", "magenta": "#ff00ff",
    "fuchsia": "#ff00ff", "silver": "#c0c0c0", "gray": "#808080", "grey": "#808080", "maroon": "#800000",
    "olive": "#808000", "purple": "#800080", "teal": "#008080", "navy": "#000080", "orange": "#ffa500",
    "pink": "#ffc0cb", "brown": "#a52a2a", "gold": "#ffd700", "indigo": "#4b0082", "violet": "#ee82ee",
    "coral": "#ff7f50", "salmon": "#fa8072", "tomato": "#ff6347", "crimson": "#dc143c", "turquoise": "#40e0d0",
    "beige": "#f5f5dc", "ivory": "#fffff0", "khaki": "#f0e68c", "lavender": "#e6e6fa", "tan": "#d2b48c",
    "dodgerblue": "#1e90ff", "skyblue": "#87ceeb", "steelblue": "#4682b4", "slategray": "#708090",
    "rebeccapurple": "#663399",
}
_NUM = r"\s*(-?\d+(?:\.\d+)?)\s*"


def _parse(color: str) -> RGB:
    text = color.strip().lower()
    text = _NAMED.get(text.replace(" ", ""), text)
    if match := re.fullmatch(r"#?([0-9a-f]{3}|[0-9a-f]{6})", text):
        digits = match.group(1)
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    if match := re.fullmatch(rf"rgba?\({_NUM},{_NUM},{_NUM}(?:,{_NUM})?\)", text):
        values = [float(match.group(i)) for i in (1, 2, 3)]
        if any(not 0 <= v <= 255 for v in values):
            raise ValueError("rgb components must be between 0 and 255")
        return round(values[0]), round(values[1]), round(values[2])
    if match := re.fullmatch(rf"hsla?\({_NUM}(?:deg)?,{_NUM}%,{_NUM}%(?:,{_NUM})?\)", text):
        hue, sat, light = (float(match.group(i)) for i in (1, 2, 3))
        if not (0 <= sat <= 100 and 0 <= light <= 100):
            raise ValueError("hsl saturation and lightness must be between 0% and 100%")
        return _from_hsl(hue % 360, sat, light)
    raise ValueError(f"cannot parse color {color!r}; use '#rrggbb', 'rgb(r, g, b)', 'hsl(h, s%, l%)' or a CSS color name")


def _from_hsl(hue: float, sat: float, light: float) -> RGB:
    r, g, b = colorsys.hls_to_rgb(hue / 360, light / 100, sat / 100)
    return round(r * 255), round(g * 255), round(b * 255)


def _to_hsl(rgb: RGB) -> tuple[float, float, float]:
    h, l, s = colorsys.rgb_to_hls(*(c / 255 for c in rgb))
    return round(h * 360, 1), round(s * 100, 1), round(l * 100, 1)


def _hex(rgb: RGB) -> str:
    return "#" + "".join(f"{max(0, min(255, c)):02x}" for c in rgb)


def _luminance(rgb: RGB) -> float:
    # Relative luminance as defined by WCAG 2.x (sRGB linearisation).
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def convert_color(color: Color) -> dict[str, Any]:
    """Convert a color between hex, RGB and HSL formats (e.g. '#ff8800' to rgb(255, 136, 0))."""
    rgb = _parse(color)
    h, s, l = _to_hsl(rgb)
    return {
        "hex": _hex(rgb),
        "rgb": list(rgb),
        "hsl": [h, s, l],
        "css_rgb": f"rgb({rgb[0]}, {rgb[1]}, {rgb[2]})",
        "css_hsl": f"hsl({h:g}, {s:g}%, {l:g}%)",
        "relative_luminance": round(_luminance(rgb), 4),
    }


def color_contrast_ratio(
    foreground: Annotated[str, Field(description="Text color, e.g. '#333333'.")],
    background: Annotated[str, Field(description="Background color, e.g. 'white'.")],
) -> dict[str, Any]:
    """Calculate the WCAG contrast ratio between a text color and a background color and check AA/AAA accessibility."""
    lum_a, lum_b = _luminance(_parse(foreground)), _luminance(_parse(background))
    ratio = (max(lum_a, lum_b) + 0.05) / (min(lum_a, lum_b) + 0.05)
    return {
        "ratio": round(ratio, 2),
        "aa_normal_text": ratio >= 4.5,
        "aa_large_text": ratio >= 3,
        "aaa_normal_text": ratio >= 7,
        "aaa_large_text": ratio >= 4.5,
    }


def adjust_color_lightness(
    color: Color,
    amount: Annotated[float, Field(description="Percentage points to add to HSL lightness; negative darkens.", ge=-100, le=100)],
) -> str:
    """Lighten or darken a color by changing its HSL lightness, returning the new hex color."""
    if not -100 <= amount <= 100:
        raise ValueError("amount must be between -100 and 100")
    h, s, l = _to_hsl(_parse(color))
    return _hex(_from_hsl(h, s, max(0.0, min(100.0, l + amount))))


def mix_colors(
    color_a: Color,
    color_b: Color,
    weight: Annotated[float, Field(description="Share of color_b in the mix, from 0 (all a) to 1 (all b).", ge=0, le=1)] = 0.5,
) -> str:
    """Blend two colors together in a given proportion and return the hex result."""
    if not 0 <= weight <= 1:
        raise ValueError("weight must be between 0 and 1")
    a, b = _parse(color_a), _parse(color_b)
    mixed = tuple(round(x * (1 - weight) + y * weight) for x, y in zip(a, b))
    return _hex(mixed)  # type: ignore[arg-type]


def color_palette(
    color: Color,
    scheme: Annotated[
        Literal["complementary", "analogous", "triadic", "tetradic", "split_complementary", "monochromatic"],
        Field(description="Color-harmony rule used to derive the palette."),
    ] = "complementary",
) -> list[str]:
    """Generate a harmonious color palette (complementary, analogous, triadic, ...) from a base color."""
    h, s, l = _to_hsl(_parse(color))
    if scheme == "monochromatic":
        return [_hex(_from_hsl(h, s, max(5.0, min(95.0, l + delta)))) for delta in (-30, -15, 0, 15, 30)]
    offsets = {
        "complementary": (0, 180),
        "analogous": (-30, 0, 30),
        "triadic": (0, 120, 240),
        "tetradic": (0, 90, 180, 270),
        "split_complementary": (0, 150, 210),
    }[scheme]
    return [_hex(_from_hsl((h + off) % 360, s, l)) for off in offsets]
