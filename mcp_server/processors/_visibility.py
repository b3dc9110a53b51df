"""Every text a processor returns, settled once: hidden-text marks and invisible code points out.

``process_document`` calls ``settle_document`` on each processor's result, so content, locations,
tables, OCR text, metadata (and through them chunks, passages, read windows and the index) all
see the same cleaned text; the flags land on ``ProcessedDocument.flags`` in the new offsets (a metadata
field's with its name in ``TextFlag.field``, offsets into the field's value).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mcp_server.core.models import ExtractedImage, ExtractedTable, ExtractedURL, Location, ProcessedDocument, TextFlag
from mcp_server.core.visibility import HiddenPolicy, Settled, clean_text, settle

__all__ = ["settle_document"]


def settle_document(doc: ProcessedDocument, policy: HiddenPolicy) -> ProcessedDocument:
    """``doc`` with its texts settled under ``policy`` (the same object when nothing was there)."""
    content = settle(doc.content, policy)
    changes: dict[str, Any] = {}
    if content.removed:
        changes["content"] = content.text
        changes["flags"] = (*doc.flags, *content.flags)
        changes["locations"] = _moved(doc.locations, content)
    tables = tuple(_table(t, policy) for t in doc.tables)
    if any(new is not old for new, old in zip(tables, doc.tables, strict=True)):
        changes["tables"] = tables
    images = tuple(_image(i, policy) for i in doc.images)
    if any(new is not old for new, old in zip(images, doc.images, strict=True)):
        changes["images"] = images
    urls = tuple(_url(u, policy) for u in doc.extracted_urls)
    if any(new is not old for new, old in zip(urls, doc.extracted_urls, strict=True)):
        changes["extracted_urls"] = urls
    found: list[TextFlag] = []
    metadata = _value(doc.metadata, policy, "", found)
    if metadata is not doc.metadata:
        changes["metadata"] = metadata
    if found:  # a metadata field's flags name it (``field``): their offsets are into its value
        changes["flags"] = (*changes.get("flags", doc.flags), *found)
    return dataclasses.replace(doc, **changes) if changes else doc


def _moved(locations: tuple[Location, ...], settled: Settled) -> tuple[Location, ...]:
    """The locations in the new offsets; one left empty by a dropped span goes."""
    out = []
    for loc in locations:
        start, end = settled.position(loc.start), settled.position(loc.end)
        if end > start or loc.end == loc.start:
            path = tuple(clean_text(title) for title in loc.heading_path)
            out.append(dataclasses.replace(loc, start=start, end=end, heading_path=path))
    return tuple(out)


def _table(table: ExtractedTable, policy: HiddenPolicy) -> ExtractedTable:
    content = settle(table.content, policy).text
    return table if content == table.content else dataclasses.replace(table, content=content)


def _url(url: ExtractedURL, policy: HiddenPolicy) -> ExtractedURL:
    context = settle(url.context, policy).text
    return url if context == url.context else dataclasses.replace(url, context=context)


def _image(image: ExtractedImage, policy: HiddenPolicy) -> ExtractedImage:
    text = settle(image.ocr_text, policy).text
    return image if text == image.ocr_text else dataclasses.replace(image, ocr_text=text)


def _value(value: Any, policy: HiddenPolicy, name: str, found: list[TextFlag]) -> Any:
    """Metadata strings settled like the content, however deep they sit, their flags added to ``found``
    with the field's name (``subject``, ``attachments[0].title``); the same object if none changed."""
    if isinstance(value, str):
        settled = settle(value, policy)
        if settled.text == value:
            return value
        found.extend(dataclasses.replace(flag, field=name) for flag in settled.flags)
        return settled.text
    if isinstance(value, dict):
        items = {key: _value(item, policy, f"{name}.{key}" if name else str(key), found)
                 for key, item in value.items()}
        return value if all(items[k] is value[k] for k in value) else items
    if isinstance(value, list | tuple):
        new = [_value(item, policy, f"{name}[{i}]", found) for i, item in enumerate(value)]
        return value if all(a is b for a, b in zip(new, value, strict=True)) else type(value)(new)
    return value
