"""A page's own style sheets (``<style>`` blocks), matched to its elements: the declarations that hide text.

Only what can hide text or decide its background is kept (``display``, ``visibility``, ``font-size``,
``opacity``, ``color``, ``background``, offsets), from rules that apply on a screen: top-level rules,
``@media screen``/``all`` without conditions and ``@supports`` blocks; a rule behind a media condition
(a width, print) or with a pseudo-class such as ``:hover`` or a pseudo-element is not applied. The
rules a page keeps are matched through XPath (cssselect) on an lxml tree and through soupsieve on a
BeautifulSoup tree, in cascade order (specificity, then order; ``!important`` last). Linked style
sheets are not fetched: on a page that has one, a background not declared here stays unknown.
Parsed by tinycss2; a page with no ``<style>`` costs one search for the element.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import tinycss2
from cssselect import HTMLTranslator, SelectorError, parse

__all__ = ["Declared", "Rule", "match_rules", "rules_of"]

HIDING = frozenset({"display", "visibility", "font-size", "opacity", "left", "top", "text-indent", "margin-left",
                    "margin-top"})
COLOURS = frozenset({"color", "background", "background-color"})
MAX_RULES = 3000  # a page's rules kept past this are not applied (the backgrounds are then unknown)
_SCREEN = frozenset({"", "screen", "all", "only screen"})
_TRANSLATOR = HTMLTranslator()
_DYNAMIC = (":hover", ":focus", ":active", ":visited", ":target", ":checked", "::", ":before", ":after",
            ":first-line", ":first-letter", ":placeholder", ":selection")


@dataclass(frozen=True, slots=True)
class Rule:
    selector: str
    specificity: tuple[int, int, int]
    declarations: tuple[tuple[str, str, bool], ...]  # (property, value, important)
    xpath: str


def _declarations(content: list[Any]) -> tuple[tuple[str, str, bool], ...]:
    out = []
    for item in tinycss2.parse_blocks_contents(content, skip_comments=True, skip_whitespace=True):
        if item.type == "declaration" and item.lower_name in HIDING | COLOURS:
            out.append((item.lower_name, tinycss2.serialize(item.value).strip().lower(), item.important))
    return tuple(out)


def _selectors(prelude: list[Any]) -> Iterable[str]:
    """The prelude's comma-separated selectors (commas inside parentheses are not separators)."""
    part: list[Any] = []
    for token in prelude:
        if token.type == "literal" and token.value == ",":
            yield tinycss2.serialize(part).strip()
            part = []
        else:
            part.append(token)
    yield tinycss2.serialize(part).strip()


def _rules(items: list[Any], out: list[Rule], *, applied: bool = True) -> bool:
    """Add the rules of ``items`` that apply (``applied``) to ``out``; whether every rule that paints a
    background was kept (one that was not leaves the page's backgrounds unknown)."""
    sure = True
    for item in items:
        if len(out) >= MAX_RULES:
            return False
        if item.type == "at-rule" and item.content is not None:
            condition = tinycss2.serialize(item.prelude).strip().lower()
            applies = item.lower_at_keyword == "supports" or (item.lower_at_keyword == "media" and condition in _SCREEN)
            inner = tinycss2.parse_blocks_contents(item.content, skip_comments=True, skip_whitespace=True)
            sure = _rules(inner, out, applied=applied and applies) and sure
            continue
        if item.type != "qualified-rule":
            continue
        declarations = _declarations(item.content)
        if not declarations:
            continue
        paints = any(name != "color" and name in COLOURS for name, _, _ in declarations)
        for text in _selectors(item.prelude):
            try:
                if not applied or any(pseudo in text.lower() for pseudo in _DYNAMIC):
                    raise ValueError(text)  # a state of the page (:hover ...) or a condition: not as it stands
                [selector] = parse(text)
                xpath = _TRANSLATOR.selector_to_xpath(selector)
            except (SelectorError, ValueError):
                sure = sure and not paints
                continue
            out.append(Rule(text, selector.specificity(), declarations, xpath))
    return sure


def rules_of(sheets: Iterable[str]) -> tuple[list[Rule], bool]:
    """The rules of the page's style sheets that may hide text; whether every background rule was kept.
    A sheet that cannot be read is skipped (and the backgrounds are then not known): what is hidden is
    a flag, never a reason to fail the page."""
    out: list[Rule] = []
    sure = True
    for sheet in sheets:
        rules, complete = _sheet(sheet)
        out += rules
        sure = sure and complete
    return out[:MAX_RULES], sure and len(out) <= MAX_RULES


@functools.lru_cache(maxsize=8)  # an EPUB's chapters share their book's style sheet
def _sheet(text: str) -> tuple[list[Rule], bool]:
    out: list[Rule] = []
    try:
        sure = _rules(tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True), out)
    except Exception:
        return out, False
    return out, sure


Declared = tuple[dict[str, str], dict[str, str]]  # (normal, !important): inline style stands between them


def match_rules(rules: list[Rule], select: Callable[[Rule], Iterable[Any]]) -> dict[int, tuple[Any, Declared]]:
    """id(element) -> (the element, its style from the sheets), in cascade order; the element is kept
    with its id (an lxml element's proxy keeps its id only while it is referenced)."""
    matched: dict[int, tuple[Any, list[tuple[tuple[Any, ...], str, str]]]] = {}
    for order, rule in enumerate(rules):  # the rules in the page's order: a later one wins a tie
        try:
            elements = list(select(rule))
        except Exception:  # a selector the engine cannot run is not applied
            continue
        for element in elements:
            entry = matched.setdefault(id(element), (element, []))
            for name, value, important in rule.declarations:
                entry[1].append(((important, rule.specificity, order), name, value))
    out = {}
    for key, (element, declared) in matched.items():
        declared.sort(key=lambda item: item[0])
        normal = {name: value for (important, _, _), name, value in declared if not important}
        out[key] = (element, (normal, {name: value for (important, _, _), name, value in declared if important}))
    return out
