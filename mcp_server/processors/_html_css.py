"""A page's own style sheets (``<style>`` blocks): the rules that hide text, matched element by element.

Real pages embed up to a megabyte of CSS, so the sheets are not parsed whole: the braces are found
by one regular expression and only a block whose declarations can hide text (``display:none``,
``visibility:hidden``, a font size of 1 px or less, an opacity of 0.05 or less, a large negative
offset, ``clip``/``clip-path``, a ``scale`` transform, a height of 1 px or less, read with the rules
that set ``overflow`` and ``padding``) or decide its colour (``color``, ``background``) is read. A
rule applies when it stands at the top level or in ``@media screen``/``all`` (no condition) or
``@supports``; one behind a media condition (a width, print), in ``@keyframes`` or other at-rules
does not. Selectors are matched here, by each element's
id, classes and tag (one dictionary look-up each), for what attackers and pages use: type, ``#id``,
``.class``, ``[attr]`` and ``[attr=value]`` compounds joined by descendant and child combinators.
A selector with a pseudo-class, a sibling combinator or another attribute operator is not applied;
when such a rule paints a background, or the colour rules are too many to weigh
(``MAX_COLOUR_RULES``), the page's backgrounds are unknown and colour decides nothing.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Attr", "Declared", "Sheet", "View", "sheet_of"]

MAX_COLOUR_RULES = 400  # colour and background rules past this: backgrounds unknown (the page's own CSS)
_BRACE = re.compile(r"[{}]")
# One pattern per property, each starting with its name: a literal prefix is searched for at C speed,
# where one pattern of alternatives is tried at every character of a megabyte of CSS (lowercased first).
_HIDES = tuple(re.compile(pattern) for pattern in (
    r"display\s*:\s*none", r"visibility\s*:\s*(?:hidden|collapse)", r"font-size\s*:\s*[0.]+\s*[a-z%]*\s*(?:[;!}]|$)",
    r"opacity\s*:\s*[0.]+\s*(?:[;!}]|$)", *(name + r"\s*:\s*-\d{4}" for name in (
        "left", "top", "text-indent", "margin-left", "margin-top")),
    r"font-size\s*:\s*(?:0?\.\d+|1(?:\.0*)?)\s*(?:px|pt)", r"opacity\s*:\s*0?\.0\d*\s*(?:[;!}]|$)",
    r"clip\s*:\s*rect\(", r"clip-path\s*:\s*(?:inset|circle|ellipse)\(",
    r"transform\s*:[^;}]*scale[xy3d]*\(\s*(?:[\d.]+\s*,\s*)?0?\.?0*\s*[,)]",
    *(name + r"\s*:\s*(?:0|1px|0?\.\d+px)\s*(?:[;!}]|$)" for name in ("height", "max-height"))))
# A box collapsed by its height hides only when it clips what overflows: these rules are read with it.
_WITH_HEIGHT = ("overflow", "padding")
_COLOURS = (re.compile(r"color\s*:"), re.compile(r"background(?:-color)?\s*:"))
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
_PAINT = frozenset({"color", "background", "background-color"})
_DECLARATION = re.compile(r"([a-zA-Z-]+)\s*:\s*([^;]+)")
_WANTED = frozenset({"display", "visibility", "font-size", "opacity", "left", "top", "text-indent", "margin-left",
                     "margin-top", "color", "background", "background-color", "clip", "clip-path", "transform",
                     "height", "max-height", "overflow", "overflow-x", "overflow-y", "padding", "padding-top",
                     "padding-bottom"})
_SCREEN = frozenset({"@media screen", "@media all", "@media only screen", "@supports"})
_NEVER = frozenset({"@media print", "@media speech"})
_NEVER_AT = frozenset({"@keyframes", "@-webkit-keyframes", "@font-face", "@page", "@counter-style", "@property"})
# A state the page is not in as it stands (hover ...) or generated content: such a rule is simply not
# applied, and says nothing about the backgrounds as they stand.
_AT_REST = re.compile(r"::?(?:hover|focus|focus-within|focus-visible|active|visited|target|before|after|"
                      r"placeholder|selection|marker|backdrop|-webkit-[\w-]+|-moz-[\w-]+)\b", re.IGNORECASE)
_COMBINATOR = re.compile(r"\s*>\s*|\s+")
_COMPOUND = re.compile(r"(?P<tag>[a-zA-Z][\w-]*|\*)?(?P<rest>(?:[#.][\w-]+|\[[\w-]+(?:=\"?[^\]\"]*\"?)?\])*)")
_PART = re.compile(r"([#.])([\w-]+)|\[([\w-]+)(?:=\"?([^\]\"]*)\"?)?\]")

Declared = tuple[dict[str, str], dict[str, str]]  # (normal, !important): inline style stands between them


@dataclass(frozen=True, slots=True)
class _Compound:
    tag: str | None
    id: str | None
    classes: tuple[str, ...]
    attrs: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True, slots=True)
class _Rule:
    compounds: tuple[_Compound, ...]  # left to right
    children: tuple[bool, ...]  # the combinator before each compound but the first: True for ">"
    specificity: tuple[int, int, int]
    order: int
    declarations: tuple[tuple[str, str, bool], ...]
    needs: frozenset[tuple[str, str]]  # a key each ancestor compound needs among the element's ancestors


def _key(compound: _Compound) -> tuple[str, str]:
    if compound.id is not None:
        return "id", compound.id
    if compound.classes:
        return "class", compound.classes[0]
    return ("tag", compound.tag) if compound.tag is not None else ("*", "")


def _compound(text: str) -> _Compound | None:
    found = _COMPOUND.fullmatch(text)
    if found is None or not text:
        return None
    tag = found.group("tag")
    ident, classes, attrs = None, [], []
    for mark, name, attr, value in _PART.findall(found.group("rest")):
        if mark == "#":
            ident = name
        elif mark == ".":
            classes.append(name)
        else:
            attrs.append((attr.lower(), value if "=" in found.group("rest") and value != "" else None))
    return _Compound(None if tag in (None, "*") else tag.lower(), ident, tuple(classes), tuple(attrs))


_SIMPLE = re.compile(r"([a-zA-Z][\w-]*)?(?:([.#])([\w-]+))?")


def _rule(selector: str, order: int, declarations: tuple[tuple[str, str, bool], ...]) -> _Rule | None:
    selector = selector.strip()
    simple = _SIMPLE.fullmatch(selector)
    if simple is not None and selector:  # "p", ".note", "#aside", "div.note": most rules, read at once
        tag, mark, name = simple.groups()
        compound = _Compound(tag.lower() if tag else None, name if mark == "#" else None,
                             (name,) if mark == "." else (), ())
        return _Rule((compound,), (), (int(mark == "#"), int(mark == "."), int(tag is not None)), order,
                     declarations, frozenset())
    if not selector or any(c in selector for c in ":+~|()"):
        return None
    parts = _COMBINATOR.split(selector)
    joins = [m.group().strip() == ">" for m in _COMBINATOR.finditer(selector)]
    compounds = [_compound(part) for part in parts]
    if any(c is None for c in compounds) or len(joins) != len(compounds) - 1:
        return None
    kept = tuple(c for c in compounds if c is not None)
    specificity = (sum(c.id is not None for c in kept), sum(len(c.classes) + len(c.attrs) for c in kept),
                   sum(c.tag is not None for c in kept))
    needs = frozenset(_key(c) for c in kept[:-1]) - {("*", "")}
    return _Rule(kept, tuple(joins), specificity, order, declarations, needs)


def _declarations(body: str) -> tuple[tuple[str, str, bool], ...]:
    out = []
    for name, value in _DECLARATION.findall(body):
        name, value = name.lower(), value.strip().lower()
        if name in _WANTED:
            important = value.endswith("!important")
            out.append((name, value.removesuffix("!important").strip(), important))
    return tuple(out)


View = Callable[[Any], tuple[str, str | None, tuple[str, ...], Any]]  # (tag, id, classes, parent)
Attr = Callable[[Any, str], str | None]


def _cheap_key(selector: str) -> tuple[str, str] | None:
    """The key ``_rule`` would give a selector whose rightmost compound is a tag, a class or an id
    (most are), read without parsing it; None for any other (parsed at once)."""
    last = _COMBINATOR.split(selector.strip())[-1]
    found = _SIMPLE.fullmatch(last) if last else None
    if found is None:
        return None
    tag, mark, name = found.groups()
    if mark is not None:
        return ("id" if mark == "#" else "class"), name
    return ("tag", tag.lower()) if tag else None


class _Pending:
    """The rules that only set what a hiding rule sets (thousands on a real page: every ``height``,
    ``padding`` or ``display``), parsed key by key the first time an element with that key matches a
    deciding rule: most are never asked for."""

    def __init__(self, pending: list[tuple[str, int, tuple[tuple[str, str, bool], ...]]]) -> None:
        self._raw: dict[tuple[str, str], list[tuple[str, int, tuple[tuple[str, str, bool], ...]]]] = {}
        self._parsed: dict[tuple[str, str], list[_Rule]] = {}
        for text, order, declarations in pending:
            key = _cheap_key(text)
            if key is not None:
                self._raw.setdefault(key, []).append((text, order, declarations))
            elif (rule := _rule(text, order, declarations)) is not None:
                self._parsed.setdefault(_key(rule.compounds[-1]), []).append(rule)

    def get(self, key: tuple[str, str], default: tuple[()] = ()) -> list[_Rule] | tuple[()]:
        raw = self._raw.pop(key, None)
        if raw is not None:
            rules = self._parsed.setdefault(key, [])
            rules += [rule for text, order, declarations in raw if (rule := _rule(text, order, declarations))]
        return self._parsed.get(key, default)


@dataclass(slots=True)
class Sheet:
    """A page's rules that hide text or colour it, keyed by the rightmost compound's id, class or tag."""

    deciding: dict[tuple[str, str], list[_Rule]]  # rules that hide text or paint it
    backgrounds_known: bool
    # rules that only set what a hiding rule sets, read when an element first matches a deciding rule
    pending: list[tuple[str, int, tuple[tuple[str, str, bool], ...]]]
    _undoing: _Pending | None = None

    @property
    def undoing(self) -> _Pending:
        if self._undoing is None:
            self._undoing = _Pending(self.pending)
        return self._undoing

    def __bool__(self) -> bool:
        return bool(self.deciding)

    def matcher(self, view: View, attr: Attr) -> Callable[[Any], Declared | None]:
        """The style the rules give an element (None when none does), for one page's tree."""
        return _Matcher(self, view, attr).declared


class _Matcher:
    """One page's elements seen once each: their id, classes and tag, and the keys of their ancestors."""

    def __init__(self, sheet: Sheet, view: View, attr: Attr) -> None:
        self.sheet, self._view, self.attr = sheet, view, attr
        self.views: dict[int, tuple[Any, tuple[str, str | None, tuple[str, ...], Any]]] = {}
        self.above: dict[int, frozenset[tuple[str, str]]] = {}

    def view(self, element: Any) -> tuple[str, str | None, tuple[str, ...], Any]:
        found = self.views.get(id(element))
        if found is None:  # the element kept with its view: its id stays its own
            found = self.views[id(element)] = (element, self._view(element))
        return found[1]

    def ancestors(self, element: Any) -> frozenset[tuple[str, str]]:
        """The keys (tag, id, classes) of every ancestor of ``element``."""
        if id(element) in self.above:
            return self.above[id(element)]
        parent = self.view(element)[3]
        keys: frozenset[tuple[str, str]] = frozenset()
        if parent is not None:
            tag, ident, classes, _ = self.view(parent)
            own = {("tag", tag), *(("class", name) for name in classes)}
            if ident is not None:
                own.add(("id", ident))
            keys = self.ancestors(parent) | own
        self.above[id(element)] = keys
        return keys

    def declared(self, element: Any) -> Declared | None:
        matched = self.matched(self.sheet.deciding, element)
        if not matched:
            return None
        matched += self.matched(self.sheet.undoing, element)
        declared = sorted(((imp, r.specificity, r.order), n, v) for r in matched for n, v, imp in r.declarations)
        normal = {name: value for (important, _, _), name, value in declared if not important}
        return normal, {name: value for (important, _, _), name, value in declared if important}

    def matched(self, by_key: dict[tuple[str, str], list[_Rule]] | _Pending, element: Any) -> list[_Rule]:
        tag, ident, classes, _ = self.view(element)
        candidates = [*by_key.get(("*", ""), ()), *by_key.get(("tag", tag), ())]
        if ident is not None:
            candidates += by_key.get(("id", ident), ())
        for name in classes:
            candidates += by_key.get(("class", name), ())
        return [rule for rule in candidates
                if (not rule.needs or rule.needs <= self.ancestors(element)) and self.matches(rule, element)]

    def fits(self, compound: _Compound, element: Any) -> bool:
        tag, ident, classes, _ = self.view(element)
        if (compound.tag is not None and compound.tag != tag) or (compound.id is not None and compound.id != ident):
            return False
        if not all(name in classes for name in compound.classes):
            return False
        for name, value in compound.attrs:
            found = self.attr(element, name)
            if found is None or (value is not None and found != value):
                return False
        return True

    def matches(self, rule: _Rule, element: Any, index: int | None = None) -> bool:
        """Whether ``rule``'s compounds up to ``index`` (the last by default) match ``element`` and its ancestors."""
        index = len(rule.compounds) - 1 if index is None else index
        if not self.fits(rule.compounds[index], element):
            return False
        if index == 0:
            return True
        parent = self.view(element)[3]
        if rule.children[index - 1]:
            return parent is not None and self.matches(rule, parent, index - 1)
        while parent is not None:
            if self.matches(rule, parent, index - 1):
                return True
            parent = self.view(parent)[3]
        return False


def _blocks(css: str) -> list[tuple[int, int, int, bool | None]]:
    """(selector start, declarations start, declarations end, applies) of each innermost block of the
    sheet; applies is None behind a condition that may hold on a reader's screen (a width), False where
    it never does (print, keyframes)."""
    out = []
    stack: list[bool | None] = []  # the state before each open at-rule
    last, prelude_start = 0, 0
    applies: bool | None = True
    for brace in _BRACE.finditer(css):
        at = brace.start()
        if brace.group() == "{":
            if css.startswith("@", prelude_start) or css[prelude_start:at].lstrip().startswith("@"):
                condition = " ".join(css[prelude_start:at].lower().split())
                stack.append(applies)
                if condition.split(" ")[0] in _NEVER_AT or condition in _NEVER:
                    applies = False
                elif condition not in _SCREEN and applies:
                    applies = None
                prelude_start = at + 1
            last = at
            continue
        if last >= prelude_start and css[last] == "{":  # an innermost block closes
            out.append((prelude_start, last + 1, at, applies))
        elif stack:
            applies = stack.pop()
        prelude_start = last = at + 1
    return out


@functools.lru_cache(maxsize=8)  # an EPUB's chapters share their book's style sheet
def _uncommented(css: str) -> str:
    """``css`` with each comment a space, in one pass (an unclosed comment runs to the end, as CSS
    reads it): a lazy pattern would search the rest of the sheet again from every ``/*``."""
    parts, at = [], 0
    while (start := css.find("/*", at)) != -1:
        parts.append(css[at:start])
        parts.append(" ")
        end = css.find("*/", start + 2)
        at = len(css) if end == -1 else end + 2
    parts.append(css[at:])
    return "".join(parts)


def sheet_of(css: str) -> Sheet:
    """The rules of a page's style sheets that may hide text or decide its colour, and the rules that
    set a property some rule hides with (a more specific ``display:block`` undoes a ``display:none``).
    Each pattern runs once over the whole sheet; only the blocks it finds are read."""
    css = _uncommented(css) if "/*" in css else css
    low = css.lower()
    if len(low) != len(css):  # a character whose lower case is longer: search as written
        low = css
    blocks = _blocks(css)
    starts = [body for _, body, _, _ in blocks]

    def owners(patterns: Iterable[re.Pattern[str]], limit: int = -1) -> tuple[set[int], set[str]]:
        """The blocks that declare what ``patterns`` find (as a whole name), and those names; stops
        past ``limit`` blocks."""
        found, names = set(), set()
        for pattern in patterns:
            for hit in pattern.finditer(low):
                at = hit.start()
                if at and low[at - 1] in _NAME_CHARS:  # border-color, not color
                    continue
                i = bisect.bisect_right(starts, at) - 1
                if i >= 0 and at < blocks[i][2] and blocks[i][3] is not False:
                    found.add(i)
                    names.add(hit.group().split(":")[0].strip())
                    if len(found) == limit:
                        return found, names
        return found, names

    hiding, names = owners(_HIDES)
    painting = owners(_COLOURS, MAX_COLOUR_RULES + 1)[0]
    weigh = len(painting) <= MAX_COLOUR_RULES  # too many to weigh: keep what hides, judge no colour
    if names & {"height", "max-height"}:
        names |= set(_WITH_HEIGHT)
    undoing = owners(re.compile(re.escape(name) + r"(?:-[a-z]+)?\s*:") for name in sorted(names))[0]
    sheet = Sheet({}, weigh, [])
    order = 0
    for i in sorted(hiding | (painting if weigh else set()) | undoing):
        selector_start, body_start, body_end, applies = blocks[i]
        body = css[body_start:body_end]
        declarations = _declarations(body)
        if not weigh:
            declarations = tuple(d for d in declarations if d[0] not in _PAINT)
        deciding = i in hiding or (weigh and i in painting)
        for text in css[selector_start:body_start - 1].split(","):
            order += 1
            if _AT_REST.search(text):
                continue  # never applies as the page stands: says nothing of its backgrounds
            if not deciding:
                if applies:
                    sheet.pending.append((text, order, declarations))
                continue
            rule = _rule(text, order, declarations) if applies else None
            if rule is None:
                sheet.backgrounds_known = sheet.backgrounds_known and "background" not in body.lower()
                continue
            sheet.deciding.setdefault(_key(rule.compounds[-1]), []).append(rule)
    return sheet
