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
    if shape.left is None or shape.top is None or not shape.width or not shape.height:
        return None
    left, top = int(shape.left), int(shape.top)
    return left, top, left + int(shape.width), top + int(shape.height)


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
    """The ids of the top-level shapes that a later opaque shape wholly covers."""
    listed = [(shape, _box(shape)) for shape in shapes]
    covers = [(i, box) for i, (shape, box) in enumerate(listed) if box is not None and _opaque(shape)]
    if not covers:
        return set()
    out = set()
    for i, (shape, box) in enumerate(listed):
        if box is None:
            continue
        for j, over in covers:
            if j > i and over[0] <= box[0] and over[1] <= box[1] and over[2] >= box[2] and over[3] >= box[3]:
                out.add(shape.shape_id)
                break
    return out
