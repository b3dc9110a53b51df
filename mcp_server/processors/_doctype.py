"""XML with a DOCTYPE, read safely: internal entities with bounded expansion, nothing external.

Real files carry DOCTYPEs: every Project Gutenberg EPUB (``<!DOCTYPE html PUBLIC ...>``), the Basic
macro parts OpenOffice.org writes into ODF packages, XML data files declaring a few entities. What
is refused is what makes XML dangerous, judged from the DOCTYPE before any parser sees it:

- an external entity (``SYSTEM``/``PUBLIC`` in an ``<!ENTITY>``), a parameter entity (``%``),
  or anything in the internal subset that is not a plain declaration: ``unsafe_xml`` (XXE, DTD
  tricks); the external DTD a DOCTYPE names is never loaded;
- entities that would expand to more than ``MAX_EXPANSION`` characters, counting each reference
  in the document once per use: ``bomb`` (billion laughs, quadratic blowup); a cycle likewise.

Hand-written because defusedxml only forbids (DTDs, or every entity declaration) and expat's own
amplification guard starts only after 8 MiB of output; the scan is one regex pass over the subset
and one over the document's references.
"""

from __future__ import annotations

import re
from xml.etree.ElementTree import Element

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from mcp_server.core.errors import ProcessingError

__all__ = ["MAX_EXPANSION", "check_doctype", "decode_xml_head", "parse_xml", "prolog_of"]

MAX_EXPANSION = 1 << 20  # characters all entity references of one document may add

_DOCTYPE = re.compile(
    r"""<!DOCTYPE\s+[^\s\[>]+(?:\s+(?:SYSTEM\s*(?:"[^"]*"|'[^']*')|PUBLIC\s*(?:"[^"]*"|'[^']*')\s*(?:"[^"]*"|'[^']*')?))?"""
    r"""\s*(?:\[(?P<subset>(?:[^\]"']|"[^"]*"|'[^']*')*)\])?\s*>""",
    re.DOTALL,
)
_NAME = r"[A-Za-z_:][\w.:-]*"
# One token of an internal subset; anything else in it is refused.
_SUBSET_TOKEN = re.compile(
    rf"""\s+|<!--.*?-->|<\?.*?\?>"""
    rf"""|<!ENTITY\s+(?P<name>{_NAME})\s+(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)')\s*>"""
    rf"""|<!(?:ELEMENT|ATTLIST|NOTATION)\s(?:[^>"'%]|"[^"]*"|'[^']*')*>""",
    re.DOTALL,
)
_REFERENCE = re.compile(rf"&({_NAME});")
_CHARACTER = re.compile(r"&#(x[0-9a-fA-F]{1,8}|[0-9]{1,10});")
_ROOT_START = re.compile(r"<[A-Za-z_]")


def decode_xml_head(head: bytes) -> str:
    """Decode XML bytes far enough to read its markup (UTF-8/16/32 aware; latin-1 never fails, and
    markup is ASCII in every ASCII-compatible encoding)."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        encoding = "utf-32"
    elif head.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    elif head.startswith(b"<\x00"):
        encoding = "utf-16-le"
    elif head.startswith(b"\x00<"):
        encoding = "utf-16-be"
    else:
        encoding = "latin-1"
    return head.decode(encoding, errors="ignore")


def prolog_of(text: str) -> str | None:
    """The text before the root element's start tag; None when the root is not in ``text``. A
    ``<`` inside the DOCTYPE's subset (its declarations) does not end the prolog."""
    root = _ROOT_START.search(text)
    if root is None:
        return None
    at = text.find("<!DOCTYPE", 0, root.start())
    doctype = _DOCTYPE.match(text, at) if at >= 0 else None
    if doctype is not None and doctype.end() > root.start():
        root = _ROOT_START.search(text, doctype.end())
        if root is None:
            return None
    return text[: root.start()]


def check_doctype(text: str, prolog: str | None = None) -> None:
    """Raise ``ProcessingError`` (``reason`` ``unsafe_xml`` or ``bomb``) for a DOCTYPE that declares
    anything external or entities expanding past ``MAX_EXPANSION``; ``text`` is the whole document
    (its references are counted), ``prolog`` its prolog when already found."""
    prolog = prolog_of(text) if prolog is None else prolog
    if prolog is None or "<!DOCTYPE" not in prolog.upper():
        if prolog is not None and "<!ENTITY" in prolog.upper():
            raise ProcessingError("XML entity declarations outside a DOCTYPE are not XML", reason="corrupt")
        return
    doctype = _DOCTYPE.search(prolog)
    if doctype is None:
        raise ProcessingError("an XML DOCTYPE this server does not read (external or malformed declarations)",
                              reason="unsafe_xml")
    entities = _entities(doctype.group("subset") or "")
    if entities:
        sizes = _expanded_sizes(entities)
        added = sum(sizes.get(name, 0) for name in _REFERENCE.findall(text, doctype.end()))
        if added > MAX_EXPANSION:
            raise _bomb(added)


def parse_xml(data: bytes) -> Element:
    """Parse XML with its DOCTYPE checked first (``check_doctype``), internal entities expanded,
    nothing external resolved. Raises ``ProcessingError`` (``corrupt`` for XML that is not well formed)."""
    check_doctype(decode_xml_head(data))
    try:
        return ElementTree.fromstring(data, forbid_dtd=False, forbid_entities=False, forbid_external=True)
    except DefusedXmlException as exc:
        raise ProcessingError(f"XML that refers to external resources is not read ({type(exc).__name__})",
                              reason="unsafe_xml") from exc
    except ElementTree.ParseError as exc:
        raise ProcessingError(f"not valid XML: {exc}", reason="corrupt") from exc


def _entities(subset: str) -> dict[str, str]:
    """The internal subset's general entities (name -> replacement text); raises for anything
    external, parameter entities and what is not a declaration."""
    entities: dict[str, str] = {}
    position = 0
    while position < len(subset):
        token = _SUBSET_TOKEN.match(subset, position)
        if token is None:
            what = "an external or parameter entity" if re.match(r"<!ENTITY|%", subset[position:]) else "a declaration"
            raise ProcessingError(f"XML DTDs with {what} this server does not read are not allowed (no external "
                                  "entities, no parameter entities)", reason="unsafe_xml")
        if token.group("name"):
            value = token.group("dq") if token.group("dq") is not None else token.group("sq") or ""
            # The first declaration of a name binds (XML 1.0, 4.2); character references are
            # replaced when an entity is declared, so "&#38;a;" is a reference to a when used.
            entities.setdefault(token.group("name"), _CHARACTER.sub(_character, value))
        position = token.end()
    return entities


def _character(match: re.Match[str]) -> str:
    number = match.group(1)
    code = int(number[1:], 16) if number.startswith("x") else int(number)
    return chr(code) if code < 0x110000 else ""


def _expanded_sizes(entities: dict[str, str]) -> dict[str, int]:
    """Each entity's length once every reference inside it is replaced; a cycle or a length past
    ``MAX_EXPANSION`` raises at once, without building any of the text."""
    sizes: dict[str, int] = {}
    visiting: set[str] = set()

    def size(name: str) -> int:
        if name in sizes:
            return sizes[name]
        if name in visiting:
            raise ProcessingError(f"the XML entity {name!r} refers to itself", reason="bomb")
        visiting.add(name)
        value = entities[name]
        total = len(_REFERENCE.sub("", value))
        for ref in _REFERENCE.findall(value):
            total += size(ref) if ref in entities else len(ref) + 2
            if total > MAX_EXPANSION:
                raise _bomb(total)
        visiting.discard(name)
        sizes[name] = total
        return total

    for name in entities:
        size(name)
    return sizes


def _bomb(added: int) -> ProcessingError:
    return ProcessingError(
        f"XML entities would expand to more than {MAX_EXPANSION:,} characters (an entity-expansion bomb)",
        reason="bomb", limit="xml_entity_expansion", expanded_at_least=added,
    )
