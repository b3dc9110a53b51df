"""XML -> ``path: text`` lines (``_paths``): each element's text under its element path, repeated
siblings numbered (``rss/channel/item[3]/title: ...``), attributes as ``path/@name``. Locations
by the first two steps below the root, so an RSS item or a record is one section.

Parsed by ``_doctype.parse_xml``: a DOCTYPE and internal entities are read, with their expansion
bounded; external references and parameter entities are refused (billion laughs and XXE are clear
errors). XHTML is the HTML processor's; this takes XML the HTML sniffer does not claim.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import ClassVar
from xml.etree.ElementTree import Element

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._doctype import parse_xml
from mcp_server.processors._paths import lines_document
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.encoding import decode_sample
from mcp_server.processors.formats import Chunking, Format, Likelihood

__all__ = ["XmlProcessor"]

_XML_START = re.compile(r"^\ufeff?\s*<\?xml[\s?]|^\ufeff?\s*<[A-Za-z_][\w.:-]*(\s[^>]*)?\sxmlns[:=]", re.ASCII)


def looks_like_xml(data: bytes) -> Likelihood | None:
    """An XML declaration, or a root element declaring a namespace."""
    return Likelihood.LIKELY if _XML_START.match(decode_sample(data[:1024])) else None


class XmlProcessor:
    format: ClassVar[Format] = Format(
        doc_type="xml",
        description="XML (RSS, Atom, data files): one `path: text` line per element, its path as its location",
        extensions=(".xml", ".rss", ".atom", ".xsd", ".kml", ".gpx"),
        mime_types=("application/xml", "text/xml", "application/rss+xml", "application/atom+xml"),
        text=True,
        looks_like=looks_like_xml,
        chunking=Chunking(size=1200, overlap=200, headings=False),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        root = parse_xml(doc.data)
        content, locations, count = lines_document(_walk(root))
        return ProcessedDocument(content=content, doc_type="xml", locations=locations,
                                 metadata={"root": _name(root.tag), "value_count": count})


def _walk(root: Element) -> Iterator[tuple[tuple[str, ...], str]]:
    """``(path steps, text)`` for every attribute and text, in document order, without recursion."""
    stack: list[tuple[tuple[str, ...], Element]] = [((_name(root.tag),), root)]
    while stack:
        path, element = stack.pop()
        for key, value in element.attrib.items():
            if not key.startswith("{http://www.w3.org/2000/xmlns"):
                yield path + (f"/@{_name(key)}",), value
        text = " ".join((element.text or "").split())
        if text:
            yield path, text
        totals = Counter(_name(child.tag) for child in element if isinstance(child.tag, str))
        seen: Counter[str] = Counter()
        children: list[tuple[tuple[str, ...], Element]] = []
        for child in element:
            if not isinstance(child.tag, str):
                continue
            name = _name(child.tag)
            seen[name] += 1
            step = f"/{name}[{seen[name]}]" if totals[name] > 1 else f"/{name}"
            children.append((path + (step,), child))
            tail = " ".join((child.tail or "").split())
            if tail:
                children.append((path, _Text(tail)))
        stack.extend(reversed(children))


class _Text(Element):
    """Text after a child element (mixed content), yielded under the parent's path."""

    def __init__(self, text: str) -> None:
        super().__init__("")
        self.text = text


def _name(tag: str) -> str:
    """``{namespace}local`` -> ``local``: paths are for reading, and prefixes differ per file."""
    return tag.rsplit("}", 1)[-1]
