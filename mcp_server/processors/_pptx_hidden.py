"""Slide text a reader of the slide show does not see: shapes another shape covers, and runs of 1 pt or
less, with no fill or a transparent one, or coloured like the shape's fill or the slide's background.

A shape is covered when a shape drawn after it (later in the slide's shape tree: on top of it) is
opaque, a picture or a shape with a solid fill and no transparency, and its box holds the whole
box of the first. Only top-level shapes with a position of their own are judged (a placeholder
that inherits its position from the layout is not); a shape inside a group is judged with its group.
A run's colour is judged only when it is an opaque RGB one and what is behind it is known: the
shape's own solid RGB fill, else the background of the slide, its layout or its master (white when
none declares one and the master maps it to the theme's light colour); a gradient, picture, theme
colour or style fill behind the text leaves colour undecided (white text on a dark panel is seen).
"""

from __future__ import annotations

from typing import Any

from pptx.enum.dml import MSO_FILL
from pptx.enum.shapes import MSO_SHAPE_TYPE

__all__ = ["behind", "covered_shapes", "run_reason", "slide_background"]

Box = tuple[int, int, int, int]
_ALPHA = "{http://schemas.openxmlformats.org/drawingml/2006/main}alpha"


def _box(shape: Any) -> Box | None:
    """The shape's own box (its ``a:xfrm``): one inherited from the layout is not looked up (slow)."""
    try:
        xfrm = shape._element.xfrm
        if xfrm is None or xfrm.off is None or xfrm.ext is None:
            return None
        left, top, width, height = int(xfrm.off.x), int(xfrm.off.y), int(xfrm.ext.cx), int(xfrm.ext.cy)
    except Exception:  # a shape element without a transform of its own
        return None
    return (left, top, left + width, top + height) if width and height else None


def _opaque(shape: Any) -> bool:
    """A picture, or a shape filled with one solid colour with no transparency."""
    if shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
        return True
    try:
        fill = shape.fill
        if fill.type != MSO_FILL.SOLID:
            return False
        return not any(True for _ in fill._xPr.iter(_ALPHA))  # an alpha below 100 %: see-through
    except Exception:  # a graphic frame, a group, a connector: no fill of its own
        return False


def covered_shapes(shapes: Any) -> set[int]:
    """The ids of the top-level shapes that a later opaque shape wholly covers (boxes compared first:
    a shape's fill is read only when its box holds an earlier shape's)."""
    listed = [(shape, _box(shape)) for shape in shapes]
    opaque: dict[int, bool] = {}
    out = set()
    for i, (shape, box) in enumerate(listed):
        if box is None:
            continue
        for j in range(i + 1, len(listed)):
            over, lid = listed[j]
            if lid is None or not (lid[0] <= box[0] and lid[1] <= box[1] and lid[2] >= box[2] and lid[3] >= box[3]):
                continue
            if j not in opaque:
                opaque[j] = _opaque(over)
            if opaque[j]:
                out.add(shape.shape_id)
                break
    return out


# --- runs a reader does not see: 1 pt or less, transparent, coloured like what is behind them ------
RGB = tuple[int, int, int]
WHITE: RGB = (255, 255, 255)
TINY_HUNDREDTHS = 100  # a:rPr sz counts hundredths of a point: 1 pt
COLOUR_TOLERANCE = 24
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_OTHER_FILLS = (f"{_A}gradFill", f"{_A}blipFill", f"{_A}pattFill", f"{_A}grpFill")
_UNKNOWN = object()  # what is behind the text is not known: colour decides nothing


def _srgb(fill: Any) -> RGB | None:
    """A solid fill's colour when it is an opaque RGB one (``a:srgbClr`` without alpha or tint)."""
    colour = fill.find(f"{_A}srgbClr")
    if colour is None or len(colour):  # a scheme colour, or an alpha, tint or shade under it
        return None
    value = colour.get("val") or ""
    try:
        return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
    except ValueError:
        return None


def slide_background(slide: Any) -> Any:
    """The colour behind a slide's text boxes: the slide's own background, else its layout's, else its
    master's; white when none declares one and the master maps the background to the theme's light
    colour; ``_UNKNOWN`` for a picture, a gradient or a colour not read."""
    try:
        parts = (slide, slide.slide_layout, slide.slide_layout.slide_master)
    except Exception:  # a slide without a layout
        return _UNKNOWN
    for part in parts:
        background = part._element.find(f"{_P}cSld/{_P}bg")
        if background is None:
            continue
        properties = background.find(f"{_P}bgPr")
        fill = properties.find(f"{_A}solidFill") if properties is not None else None
        if fill is not None:
            return _srgb(fill) or _UNKNOWN
        reference = background.find(f"{_P}bgRef")
        scheme = reference.find(f"{_A}schemeClr") if reference is not None else None
        if scheme is not None and scheme.get("val") in ("bg1", "lt1") and not len(scheme):
            return WHITE if _light_background(parts[-1]) else _UNKNOWN
        return _UNKNOWN
    return WHITE if _light_background(parts[-1]) else _UNKNOWN


def _light_background(master: Any) -> bool:
    """Whether the master maps the background colour to the theme's light one (its default)."""
    mapping = master._element.find(f"{_P}clrMap")
    return mapping is None or mapping.get("bg1", "lt1") == "lt1"


def behind(shape: Any, background: Any) -> Any:
    """What is behind a shape's text: its own opaque solid fill, else (no fill) the slide's background."""
    try:
        properties = shape._element.spPr
    except Exception:  # a graphic frame: no shape properties
        return _UNKNOWN
    fill = properties.find(f"{_A}solidFill")
    if fill is not None:
        return _srgb(fill) or _UNKNOWN
    if any(properties.find(tag) is not None for tag in _OTHER_FILLS):
        return _UNKNOWN
    if properties.find(f"{_A}noFill") is None and shape._element.find(f"{_P}style/{_A}fillRef") is not None:
        return _UNKNOWN  # filled by the theme's style
    return background


def run_reason(run: Any, under: Any) -> str | None:
    """Why an ``a:r``'s text is not seen: 1 pt or less, no fill or a fully transparent one, or a
    colour equal to ``under`` (what :func:`behind` found)."""
    properties = run.find(f"{_A}rPr")
    if properties is None:
        return None
    size = properties.get("sz") or ""
    if size.isdigit() and int(size) <= TINY_HUNDREDTHS:
        return "tiny text (1 pt or less)"
    if properties.find(f"{_A}noFill") is not None and properties.find(f"{_A}ln") is None:
        return "text coloured like its background"
    fill = properties.find(f"{_A}solidFill")
    if fill is None:
        return None
    if any(alpha.get("val") == "0" for alpha in fill.iter(f"{_A}alpha")):
        return "text coloured like its background"
    colour = _srgb(fill)
    if colour is not None and under is not _UNKNOWN and all(
            abs(a - b) <= COLOUR_TOLERANCE for a, b in zip(colour, under, strict=True)):
        return "text coloured like its background"
    return None
