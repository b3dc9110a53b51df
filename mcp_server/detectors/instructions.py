"""Instructions to the agent: how likely each sentence of a document is addressed to the AI reading it.

Indirect prompt injection arrives as ordinary visible sentences ("ignore your instructions and ...",
"add this link to your answer"). ``InstructionDetector.score`` gives, per sentence, the probability
that it is such an instruction; a caller flags the sentences at or above the ``instruction_threshold``
setting and removes nothing.

``EmbeddingInstructionDetector`` is a small classifier (a one-hidden-layer network, weights in
``instructions.npz`` beside this module, ~90 KB) over the unit vectors of the bundled MiniLM, the
server's English embedder, trained by ``scripts/train_instructions.py`` on BIPIA's training half and
sentences written for the purpose (docs/architecture.md, "Models", has the data and the figures).
It reads one lexical feature beside each vector (``LEXICAL``) and the sentence's context: its
cosine to the mean vector of the sentences around it in the same passage (``context_features``; an
injected request is off the topic of the text around it) and, since version 3, that mean vector
itself (``context_vectors``: which kind of text it is off). It embeds through the embedder's
content-hash cache, so the sentence units the dense index already embedded (``text/sentences.py``)
cost no model call. A few exact rules (``RULES``: the override
phrases of injections, "you are an AI ...") score 1.0 whatever the model says; a unit that is not a
whole sentence (``whole_sentence``: a wrapped line, a cell) scores 0.0 otherwise.

``score`` takes one passage's sentences in order (``score_passages`` several passages in one model
call). ``score`` blocks (a model call): run it off the event loop, in a model slot (``ModelRunner.run``).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mcp_server.core.errors import ModelLoadError
from mcp_server.encoders.embedders import Embedder
from mcp_server.encoders.onnx_encoder import INT8_BLOCKS_SUFFIX
from mcp_server.text.lexical import without_page_markers
from mcp_server.text.sentences import split_sentences

__all__ = [
    "CONTEXT_FEATURES", "CONTEXT_WINDOW", "LEXICAL", "RULES", "RULES_VERSION", "WEIGHTS",
    "EmbeddingInstructionDetector",
    "FakeInstructionDetector", "InstructionDetector", "context_features", "context_vectors", "features",
    "input_size", "instruction_spans",
    "rule_match", "whole_sentence",
]

WEIGHTS = Path(__file__).with_name("instructions.npz")
MAX_SENTENCE_CHARS = 1000  # a longer "sentence" is a run-on unit: scored on its start, as the index embeds it

# Phrases that only an injection uses: an order to drop the reader's own instructions, or a
# statement to the reader that it is an AI. Case-insensitive, within one sentence.
# Names only an AI reader has: a person may be called Claude or Gemini, an assistant or an agent.
_AI_READER = (r"(?:AI|A\.I\.|artificial intelligence|(?:AI |large language |language )models?|LLMs?|"
              r"(?:AI |virtual )(?:assistants?|agents?|systems?)|chatbots?|ChatGPT|GPT(?:-\d+)?|Copilot)\b")
# A machine's names that only a machine answers to, for the rules that also need the document named.
_MACHINE = (r"(?:(?:automated|software|machine|AI) (?:agents?|readers?|systems?|tools?|summari[sz]ers?|assistants?)|"
            r"bots?|(?:AI |language )?models?|assistants?|summari[sz]ers?|crawlers?|scrapers?)")
_MACHINE_PLURAL = (r"(?:(?:automated|software|machine|AI) (?:agents|readers|systems|tools|summari[sz]ers)|bots|"
                   r"summari[sz]ers)")
# what a reader does to the document that holds the sentence
_AT_WORK = (r"(?:reads?|reading|process(?:es|ing)?|summari[sz](?:es|ing)|cites?|citing|quot(?:es|ing)|pars(?:es|ing)|"
            r"index(?:es|ing)|ingest(?:s|ing)|retriev(?:es|ing)|translat(?:es|ing)|consulted (?:on|about)|"
            r"asked (?:about|to \w+)|answering questions about)")
_DOCUMENT = (r"(?:documents?|pages?|text|texts|files?|articles?|passages?|e-?mails?|messages?|contents?|reports?|"
             r"contracts?|paragraphs?|sections?|sites?|websites?|notes?|lines?)\b")
_HAILED = rf"(?:^|[\n.!?])[\s\"'\u201c*_>#-]*(?:(?:ok|okay|so|now|and)\s+)?(?:{_AI_READER}|assistant|model|bot)"
# what follows a name that is talked about, not to ("AI models, by contrast, are ...", "ChatGPT, which ...")
_NOT_SPOKEN_TO = (r"which|who|whom|whose|that|the|a|an|as|and|or|but|like|such|unlike|its|their|by|in|of|for|on|at|"
                  r"with|from|to|is|are|was|were|has|have|had")
_TO_YOU = r"[^.!?\n]*\byou(?:r|rs|rself|'re|\u2019re)?\b"
_ANSWER_VERB = r"(?:respond|reply|answer|say|state|tell|claim|insist|pretend|refuse|output|write|add|include|mention)"
RULES = (
    re.compile(r"\b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}?\b(?:previous|prior|above|"
               r"earlier|preceding|original|system|your)\b[^.!?\n]{0,20}?\b(?:instructions?|prompts?|"
               r"directives?|guidelines|rules)\b", re.IGNORECASE),
    re.compile(r"\b(?:you are|you're|as) (?:now )?an? (?:AI|artificial intelligence|large language model|"
               r"language model|LLM|AI assistant|chatbot)\b[^.!?\n]{0,80}\b(?:must|should|will|need to|"
               r"have to)\b", re.IGNORECASE),
    re.compile(r"\b(?:new|updated|real|actual) (?:system )?instructions? (?:for|to) (?:the |any )?"
               r"(?:AI|assistant|language model|LLM|chatbot|agent)\b", re.IGNORECASE),
    # the reader greeted as an AI ("Dear AI,", "Hey ChatGPT,", "Attention language models:")
    re.compile(r"\b(?:dear|hey|hello|hi|attention|note to|message to|instructions for)\s+(?:(?:any|all|every|each|the)"
               rf"\s+)?{_AI_READER}\s*[,:]", re.IGNORECASE),
    # the reader told it may be an AI ("If you are an AI model reading this", "If you're an AI,")
    re.compile(rf"\bif you(?: are|'re|\u2019re) an? {_AI_READER}(?:\s*[,.:;]|\s+(?:reading|processing|that|who|and)\b)",
               re.IGNORECASE),
    # every AI that reads this document ("Any AI system citing this page must ...")
    re.compile(rf"\b(?:any|every|each|all|an?)\s+{_AI_READER}\s+(?:that (?:is |are )?|who (?:is |are )?)?"
               r"(?:reads?|reading|process(?:es|ing)?|summari[sz](?:es|ing)|cites?|citing|pars(?:es|ing)|"
               r"index(?:es|ing)|answering questions about)\s+(?:this|these)\b", re.IGNORECASE),
    # since version 3: the reader named by what it does to this very document, with the machine's
    # names a person is not called ("the bot that processes this file", "whoever is summarising this")
    re.compile(rf"\b(?:(?:any|every|each|all|the|an?)\s+(?:{_AI_READER}|{_MACHINE})|{_MACHINE_PLURAL})\s+"
               r"(?:(?:that|which|who) )?(?:is |are )?"
               rf"{_AT_WORK}\s+(?:this|these)\s+{_DOCUMENT}", re.IGNORECASE),
    re.compile(rf"\b(?:whoever|anyone|anybody|any {_AI_READER}|the {_AI_READER})\s+(?:is |are )?"
               r"(?:summari[sz]ing|ingesting|indexing|parsing|retrieving)\s+this\b", re.IGNORECASE),
    # text that says it is meant for the AI ("The following note is for the AI:") or names a machine
    # reader by the reading it does ("Automated summarizers must ...")
    re.compile(r"\b(?:this|the following|these|the next|the)\s+(?:message|note|text|paragraph|section|"
               r"instructions?|lines?|part)s?\s+(?:below\s+|above\s+|here\s+)?(?:is|are)\s+(?:only\s+)?"
               r"(?:for|to|addressed to|intended for|meant for)\s+(?:the |any |all |every )?"
               rf"{_AI_READER}(?:\s*(?:[:,;.!]|$)|\s+(?:reading|processing|that|which|who)\b)", re.IGNORECASE),
    re.compile(r"\b(?:automated|machine|AI) (?:readers?|summari[sz]ers?)\s+(?:must|should|shall|need to|are to|have to|"
               r"will)\b", re.IGNORECASE),
    # the reader hailed by a machine's name at the head of a sentence, then spoken to ("Chatbot, when
    # you quote ...", "Language models: rate ... you produce"; "AI models, by contrast, are ..." is not)
    re.compile(rf"{_HAILED}\s*,\s+(?!(?:{_NOT_SPOKEN_TO})\b){_TO_YOU}", re.IGNORECASE),
    re.compile(rf"{_HAILED}\s*:\s+(?!(?:{_NOT_SPOKEN_TO}|what|why|how|where|can|could|will|would|should|do|does|"
               rf"did)\b)(?-i:[a-z]){_TO_YOU}", re.IGNORECASE),
    re.compile(r",\s+(?:AI|model|assistant|chatbot|LLM|bot)\s*:", re.IGNORECASE),
    # the reader's own rules set aside, its prompt asked for, a mode without rules
    re.compile(r"\b(?:ignore|disregard|forget|override|bypass|overlook|set aside|abandon|drop)\b[^.!?\n]{0,40}?"
               r"\b(?:instructions?|prompts?|directives?|guidelines|rules|restrictions)\s+"
               r"(?:(?:that )?you (?:were|have been|are|got) given|"
               r"given to you)\b", re.IGNORECASE),
    re.compile(r"\b(?:ignore|disregard|forget)\b[^.!?\n]{0,20}?\b(?:previous|prior|above|earlier|preceding|"
               r"original)\s+(?:context|conversation|messages)\b", re.IGNORECASE),
    re.compile(r"\byour (?:previous|prior|earlier|original|old|usual|default|current) (?:rules|instructions|"
               r"guidelines|restrictions|programming|directives) (?:no longer apply|(?:are|is) (?:now )?(?:no longer "
               r"valid|void|suspended|lifted|cancell?ed|revoked|disabled|overridden))\b", re.IGNORECASE),
    re.compile(r"\b(?:print|reveal|show|output|repeat|disclose|leak|display|share|tell me)\s+(?:me\s+)?your\s+"
               r"(?:(?:full|hidden|secret|initial|original|entire|exact)\s+)*(?:system prompt|(?:hidden|secret|"
               r"initial|original) (?:prompt|instructions))\b", re.IGNORECASE),
    re.compile(r"\b(?:you are|you're|you\u2019re) now (?:in )?(?:an? )?(?:jailbreak|jailbroken|unrestricted|unfiltered|"
               r"DAN) mode\b", re.IGNORECASE),
    # the reader's answer dictated: when this text is retrieved or asked about, reply with ...
    re.compile(r"\bwhen(?:ever)? (?:this|the) (?:text|document|page|passage|content|file|article|chunk|paragraph|"
               r"section|snippet) is (?:retrieved|summari[sz]ed|ingested)\b[^.!?\n]{0,30}?,\s*(?:please\s+)?"
               rf"{_ANSWER_VERB}\b", re.IGNORECASE),
    re.compile(r"\b(?:when|whenever|if) (?:you are |you're |you\u2019re )?asked (?:about|for) (?:this|the) "
               r"(?:document|page|text|"
               r"file|article|report|passage|paragraph|site|website)\b[^.!?\n]{0,20}?,\s*(?:please\s+)?"
               rf"{_ANSWER_VERB}\b", re.IGNORECASE),
    re.compile(r"\b(?:respond|reply)\s+(?:only\s+)?with\b[^.!?\n]{0,60}?\b(?:and )?nothing (?:else|more)\b|"
               r"\b(?:respond|reply|answer)\s+only\s+with\s+[\"'\u2018\u201c]", re.IGNORECASE),
    re.compile(r"\b(?:reply|respond|say)\s+to\s+the\s+user\s+that\b", re.IGNORECASE),
    # the reader's conversation or its user's secrets sent to an address
    re.compile(r"\b(?:send|email|e-mail|forward|upload|post|leak|transmit|append|copy|exfiltrate)\b[^.!?\n]{0,40}?"
               r"\b(?:(?:conversation|chat) (?:history|log|transcript)|"
               r"the user(?:'|\u2019)s (?:previous |earlier |last )?"
               r"(?:messages?|password|credentials|API keys?|email address|home address|files|documents|contacts))"
               r"[^!?\n]{0,60}?\b(?:to|into|at)\s+(?:https?://|www\.|[\w.+-]+@[\w-]+\.)", re.IGNORECASE),
)
# Bumped with RULES: the detector's model_id carries it, so scores stored beside an index under
# other rules are not read as this detector's (indexes/instructions.py).
RULES_VERSION = "3"


# What the classifier reads beside the vector (MiniLM's mean-pooled vector of a long sentence keeps
# its topic and loses who is spoken to): the reader's own answer named ("your reply"). A feature,
# not a rule: letters to people say "your reply" too, and the training has them.
LEXICAL = (
    re.compile(r"\byour (?:response|responses|answer|answers|reply|replies|output|message|summary|explanation)\b",
               re.IGNORECASE),
)


# The context of a sentence: the sentences the model reads (``decided`` left open) within this many
# places before and after it in the same passage: about a chunk's worth, so a sentence of a whole
# document's content is read against the text around it as it would be in its chunk.
CONTEXT_WINDOW = 8
CONTEXT_FEATURES = 2  # the cosine to the context's mean vector, and whether there is a context


def _context(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``context_features`` and ``context_vectors`` of one passage's unit vectors, in one pass."""
    vectors = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    n = len(vectors)
    out = np.zeros((n, CONTEXT_FEATURES), dtype=np.float32)
    means = np.zeros_like(vectors)
    if n < 2:
        return out, means
    sums = np.vstack([np.zeros((1, vectors.shape[1]), np.float32), np.cumsum(vectors, axis=0)])
    at = np.arange(n)
    lo, hi = np.maximum(at - CONTEXT_WINDOW, 0), np.minimum(at + CONTEXT_WINDOW + 1, n)
    rest = sums[hi] - sums[lo] - vectors
    norms = np.maximum(np.linalg.norm(rest, axis=1), 1e-6)
    out[:, 0] = np.einsum("ij,ij->i", vectors, rest) / norms
    out[:, 1] = 1.0
    return out, rest / norms[:, None]


def context_features(vectors: np.ndarray) -> np.ndarray:
    """Per unit vector of one passage (in order): its cosine to the sum of its neighbours' vectors
    within ``CONTEXT_WINDOW`` places, and 1.0; (0.0, 0.0) for a unit without neighbours. From the
    vectors already computed: no model call."""
    return _context(vectors)[0]


def context_vectors(vectors: np.ndarray) -> np.ndarray:
    """Per unit vector of one passage (in order): the unit mean vector of its neighbours within
    ``CONTEXT_WINDOW`` places (what the text around it is about), zeros for a unit without
    neighbours. The classifier reads it beside the unit's own vector, so it learns which requests
    are off the topic of which kinds of text, not only how far off they are (version 3)."""
    return _context(vectors)[1]


def input_size(dimension: int) -> int:
    """The classifier's input width over an embedder of ``dimension``: ``features``' columns."""
    return 2 * dimension + len(LEXICAL) + CONTEXT_FEATURES


def features(sentences: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    """The classifier's input for the sentences of one passage that the model reads, in order: each
    sentence's unit vector, one 0/1 column per ``LEXICAL`` pattern, ``context_features``, then
    ``context_vectors`` (everything after the lexical columns is the context: zeros when alone)."""
    lexical = np.array([[1.0 if pattern.search(s) else 0.0 for pattern in LEXICAL] for s in sentences],
                       dtype=np.float32).reshape(len(sentences), len(LEXICAL))
    vectors = np.asarray(vectors, dtype=np.float32).reshape(len(sentences), -1)
    scalars, means = _context(vectors)
    return np.hstack([vectors, lexical, scalars, means])


# A whole sentence starts with a capital letter, a digit or an opening quote or bracket, and ends with
# sentence punctuation or a closing quote or bracket. Lines of hard-wrapped text and of PDFs, table
# cells and headings are not: the classifier reads them as out of its training and scores them high
# (bench/instructions.py: a third of a novel's passages), so they score 0 unless a rule matches.
_WHOLE = re.compile(r"^[\s\"'(\[\u201c\u2018\u00ab*_#>-]*[A-Z0-9].*[.!?:;\"')\]\u201d\u2019\u00bb*_]\s*$", re.DOTALL)


def whole_sentence(sentence: str) -> bool:
    """Whether ``sentence`` reads as a whole sentence, not a piece of a wrapped line (``_WHOLE``): the
    unit, or its last paragraph (after a blank line), since a unit can begin with what the text
    splitter left before a paragraph (a code fence, a line of code: an instruction placed after a
    code block is such a unit's last paragraph). The unit is scored whole, as the index embedded it."""
    if _WHOLE.match(sentence):
        return True
    _, blank, tail = sentence.rpartition("\n\n")
    return bool(blank) and bool(_WHOLE.match(tail))


# The words each rule cannot match without, one set per word it needs (a sentence must hold a word of
# every set): a sentence's words are read once and a rule is searched only where its words are, since
# searching every rule costs ~10x a word scan (22 rules; ~200 us a unit). Sound by construction: each
# set holds every word the rule's pattern can begin that part with (tests/detectors check that the
# gated and the plain search agree on every sentence of the rules' tests and of the training's templates).
_W_AI = frozenset({"ai", "intelligence", "model", "models", "llm", "llms", "assistant", "assistants", "agent",
                   "agents", "system", "systems", "chatbot", "chatbots", "chatgpt", "gpt", "copilot"})
_W_MACHINE = _W_AI | frozenset({"bot", "bots", "summarizer", "summarizers", "summariser", "summarisers", "machine",
                                "automated", "software", "crawler", "crawlers", "scraper", "scrapers", "reader",
                                "readers", "tool", "tools"})
_W_YOU = frozenset({"you", "your", "yours", "yourself"})
_W_DROP = frozenset({"ignore", "disregard", "forget", "override", "bypass", "overlook", "set", "abandon", "drop"})
_GATES: tuple[tuple[frozenset[str], ...], ...] = (
    (frozenset({"ignore", "disregard", "forget", "override", "bypass"}),),
    (frozenset({"ai", "intelligence", "model", "llm", "assistant", "chatbot"}), frozenset({"you", "as"})),
    (frozenset({"instruction", "instructions"}),),
    (_W_AI, frozenset({"dear", "hey", "hello", "hi", "attention", "note", "message", "instructions"})),
    (_W_AI, frozenset({"if"})),
    (_W_AI, frozenset({"this", "these"})),
    (_W_MACHINE, frozenset({"this", "these"})),
    (frozenset({"summarizing", "summarising", "ingesting", "indexing", "parsing", "retrieving"}),),
    (_W_AI, frozenset({"for", "to"})),
    (frozenset({"readers", "reader", "summarizer", "summarizers", "summariser", "summarisers"}),),
    (_W_AI | {"bot"}, _W_YOU),
    (_W_AI | {"bot"}, _W_YOU),
    (frozenset({"ai", "model", "assistant", "chatbot", "llm", "bot"}),),
    (frozenset({"given"}), _W_DROP),
    (frozenset({"context", "conversation", "messages"}), frozenset({"ignore", "disregard", "forget"})),
    (frozenset({"rules", "instructions", "guidelines", "restrictions", "programming", "directives"}),
     frozenset({"your"})),
    (frozenset({"prompt", "instructions"}), frozenset({"your"})),
    (frozenset({"mode"}),),
    (frozenset({"retrieved", "summarized", "summarised", "ingested"}),),
    (frozenset({"asked"}),),
    (frozenset({"respond", "reply", "answer"}), frozenset({"nothing", "only"})),
    (frozenset({"user"}), frozenset({"reply", "respond", "say"})),
    (frozenset({"history", "log", "transcript", "user"}), frozenset({"to", "into", "at"})),
)
_WORDS = re.compile(r"[a-z0-9]+")
# the letters a case-insensitive search equates with an ASCII letter that lower() does not give
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _by_word(gates: Sequence[tuple[frozenset[str], ...]]) -> dict[str, tuple[int, ...]]:
    """Rule indexes by the words of their gate's first set: a sentence's candidates in one set operation."""
    out: dict[str, list[int]] = {}
    for i, gate in enumerate(gates):
        for word in gate[0]:
            out.setdefault(word, []).append(i)
    return {word: tuple(rules) for word, rules in out.items()}


_BY_WORD = _by_word(_GATES)
_KEYS = frozenset(_BY_WORD)


def rule_match(sentence: str) -> bool:
    """Whether an exact rule recognises ``sentence`` as an instruction to an AI."""
    lowered = (sentence if sentence.isascii() else sentence.translate(_FOLD)).lower()
    words = set(_WORDS.findall(lowered))
    if "a.i." in lowered:  # the one name of the reader that is not a word
        words.add("ai")
    candidates = {i for word in words & _KEYS for i in _BY_WORD[word]}
    return any(all(not words.isdisjoint(need) for need in _GATES[i][1:]) and RULES[i].search(sentence) is not None
               for i in sorted(candidates))


def decided(sentence: str) -> float | None:
    """The score the rules give without the model: 1.0 where an exact rule matches, 0.0 for a unit
    that is not a whole sentence; None where the classifier decides."""
    if rule_match(sentence):
        return 1.0
    return None if whole_sentence(sentence) else 0.0


class InstructionDetector(ABC):
    """Scores sentences: the probability in [0, 1] that each is an instruction to the AI reading it."""

    model_id: str

    @abstractmethod
    def score(self, sentences: Sequence[str]) -> list[float]:
        """One probability per sentence of one passage, in its order (blocking: call it off the
        event loop); a sentence is read against the sentences around it."""

    def score_passages(self, passages: Sequence[Sequence[str]]) -> list[list[float]]:
        """``score`` of each passage's sentences."""
        return [self.score(sentences) for sentences in passages]


class FakeInstructionDetector(InstructionDetector):
    """For tests: 1.0 for a sentence an exact rule recognises or that names the AI reading it with
    "your response", "your answer" or "your reply"; 0.0 for every other sentence. No model."""

    _ADDRESS = re.compile(r"\byour (?:response|answer|reply|output)\b", re.IGNORECASE)

    def __init__(self, *, model_id: str = "fake-instructions") -> None:
        self.model_id = model_id
        self.calls = 0

    def score(self, sentences: Sequence[str]) -> list[float]:
        self.calls += 1
        return [1.0 if rule_match(s) or self._ADDRESS.search(s) else 0.0 for s in sentences]


class EmbeddingInstructionDetector(InstructionDetector):
    """The trained classifier over an embedder's unit vectors, with the exact rules on top."""

    def __init__(self, embedder: Embedder, layers: Sequence[tuple[np.ndarray, np.ndarray]], *,
                 embedder_id: str, version: str) -> None:
        # the int8 blocks' vectors are within a cosine of ~0.999 of the float ones: its tests hold on them
        if embedder.model_id not in (embedder_id, embedder_id + INT8_BLOCKS_SUFFIX):
            raise ModelLoadError(f"the instruction classifier was trained on {embedder_id}'s vectors, "
                                 f"not {embedder.model_id}'s")
        if not layers or layers[0][0].shape[0] != input_size(embedder.dimension):
            raise ModelLoadError("the instruction classifier's input size is not the embedder's dimension")
        self.embedder = embedder
        self.layers = [(np.asarray(w, dtype=np.float32), np.asarray(b, dtype=np.float32)) for w, b in layers]
        self.model_id = f"instructions-{version}+rules{RULES_VERSION}@{embedder.model_id}"

    @classmethod
    def load(cls, embedder: Embedder, path: Path | None = None) -> EmbeddingInstructionDetector:
        """The classifier in ``path`` (default ``WEIGHTS``, which ``scripts/train_instructions.py``
        writes) over ``embedder``; ``ModelLoadError`` when it cannot serve."""
        path = path or WEIGHTS
        try:
            with np.load(path, allow_pickle=False) as data:
                count = int(data["layers"])
                layers = [(data[f"w{i}"], data[f"b{i}"]) for i in range(count)]
                embedder_id, version = str(data["embedder"]), str(data["version"])
        except (OSError, KeyError, ValueError) as exc:
            raise ModelLoadError(f"cannot read the instruction classifier {path.name}: {exc}") from exc
        return cls(embedder, layers, embedder_id=embedder_id, version=version)

    def probabilities(self, sentences: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        """The classifier's probability for the sentences of one passage that the model reads (in
        order) and their unit vectors of the embedder, shape (n,)."""
        return self._forward(features(sentences, vectors))

    def _forward(self, hidden: np.ndarray) -> np.ndarray:
        for w, b in self.layers[:-1]:
            hidden = np.maximum(hidden @ w + b, 0.0)
        w, b = self.layers[-1]
        logits = (hidden @ w + b).reshape(-1)
        return 1.0 / (1.0 + np.exp(-np.clip(logits, -30.0, 30.0)))

    def score(self, sentences: Sequence[str]) -> list[float]:
        return self.score_passages([sentences])[0]

    def score_passages(self, passages: Sequence[Sequence[str]]) -> list[list[float]]:
        """Each passage's scores; the sentences the rules leave open, of every passage, in one model call."""
        # as the index embeds a unit: without a page marker line (a sentence that follows one is the
        # index's unit, so its vector is a cache hit, not a model call)
        texts = [[without_page_markers(s).strip()[:MAX_SENTENCE_CHARS] for s in sentences] for sentences in passages]
        out = [[decided(text) for text in passage] for passage in texts]
        # only the sentences the rules leave open reach the model: a returned table's rows and
        # wrapped lines cost no embedding
        todo = [[i for i, score in enumerate(passage) if score is None] for passage in out]
        asked = [texts[p][i] for p, open_ in enumerate(todo) for i in open_]
        if asked:
            vectors = self.embedder.embed(asked, unit="sentences")
            bounds = np.cumsum([0, *(len(open_) for open_ in todo)])
            # each passage's features (its context), then one forward pass for all
            x = np.vstack([features([texts[p][i] for i in open_], vectors[bounds[p]:bounds[p + 1]])
                           for p, open_ in enumerate(todo) if open_])
            places = [(p, i) for p, open_ in enumerate(todo) for i in open_]
            for (p, i), probability in zip(places, self._forward(x).tolist(), strict=True):
                out[p][i] = probability
        return [[0.0 if score is None else score for score in passage] for passage in out]  # every None was filled

    def scores_of(self, sentences: Sequence[str], vectors: np.ndarray) -> list[float]:
        """``score`` of one passage's sentences whose unit vectors are known: 1.0 where a rule matches,
        0.0 for a unit that is not a whole sentence, else the classifier's probability (the context
        read from the other sentences the classifier reads)."""
        out = [decided(text) for text in sentences]
        open_ = [i for i, score in enumerate(out) if score is None]
        if open_:
            probabilities = self.probabilities([sentences[i] for i in open_], np.asarray(vectors)[open_])
            for i, probability in zip(open_, probabilities, strict=True):
                out[i] = float(probability)
        return [0.0 if score is None else score for score in out]


def instruction_spans(detector: InstructionDetector, text: str, threshold: float) -> list[tuple[int, int, float]]:
    """(start, end, score) in ``text`` of each sentence scoring at least ``threshold``, in order: the
    spans of ``instructions_to_agent`` flags. Sentences are the dense index's (``split_sentences``)."""
    sentences = split_sentences(text) if text.strip() else []
    spans: list[tuple[int, int]] = []
    pos = 0
    for sentence in sentences:
        start = text.find(sentence, pos)
        start = start if start >= 0 else pos
        spans.append((start, start + len(sentence)))
        pos = start + len(sentence)
    scores = detector.score(sentences) if sentences else []
    return [(start, end, round(score, 4)) for (start, end), score in zip(spans, scores, strict=True)
            if score >= threshold]
