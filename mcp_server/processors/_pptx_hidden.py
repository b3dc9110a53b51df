"""Slide shapes a reader of the slide show does not see because another shape covers them.

A shape is covered when a shape drawn after it (later in the slide's shape tree: on top of it) is
opaque, a picture or a shape with a solid fill and no transparency, and its box holds the whole
box of the first. Only top-level shapes with a position of their own are judged (a placeholder
that inherits its position from the layout is not); a shape inside a group is judged with its group.
"""

from __future__ import annotations

from typing import Any

from pptx.enum.dml import MSO_FILL
from pptx.enum.shapes import MSO_SHAPE_TYPE

__all__ = ["covered_shapes"]

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
