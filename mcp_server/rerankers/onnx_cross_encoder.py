"""An ONNX cross-encoder: a reranker run by ONNX Runtime and the Rust tokenizer, without PyTorch.

``MCP_RERANKER=bundled`` loads ``bundled/`` beside this module, written by
scripts/train_reranker.py (``make train-reranker``): all-MiniLM-L6-v2 trained as a (question,
passage) scorer on TAT-QA (MIT data, Apache-2.0 weights), its first four layers, int8. It is not
shipped: trained on these shared cores it lost to today's order (docs/architecture.md, "The
cross-encoder"); a missing folder
means no reranker. Any folder with ``model.onnx`` (inputs ``input_ids``, ``attention_mask``,
``token_type_ids``; one logit per pair) and ``tokenizer.json`` loads the same way. A passage is read
up to the card's ``max_length`` tokens with the question (else ``MAX_LENGTH``), as it was trained, the
longer of the two cut first (a question longer than the read is cut too, rather than failing the search).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcp_server import metrics
from mcp_server.rerankers.cross_encoders import Reranker

__all__ = ["BUNDLED_ID", "MODEL_DIR", "OnnxCrossEncoder"]

MODEL_DIR = Path(__file__).with_name("bundled")
BUNDLED_ID = "bundled"  # the ``reranker`` setting that names this model
MAX_LENGTH = 192  # tokens of question and passage together, when the card does not say


class OnnxCrossEncoder(Reranker):
    """Scores (query, passage) pairs with an ONNX sequence-classification graph (one logit). How the
    server uses it (``head``, ``weight``, ``languages``) and what it is are in the folder's ``card.json``."""

    def __init__(self, session: Any, tokenizer: Any, *, model_id: str, batch_size: int = 16) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._inputs = {i.name for i in session.get_inputs()}
        self._lock = threading.Lock()  # the tokenizer's padding state is shared
        self.model_id = model_id
        self.batch_size = batch_size

    @classmethod
    def load(cls, folder: Path = MODEL_DIR, *, threads: int | None = 1, model_id: str = "") -> OnnxCrossEncoder:
        """The graph and tokenizer in ``folder``; raises (OSError, ValueError, ONNX Runtime's) when
        either is missing or unreadable: the registry turns that into "no reranker"."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        card = _card(folder)
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=int(card.get("max_length") or MAX_LENGTH), strategy="longest_first")
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token, not a password
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        model = cls(session, tokenizer, model_id=model_id or str(card.get("model_id") or folder.name))
        model.head = int(card["head"]) if card.get("head") else None
        model.weight = float(card["weight"]) if card.get("weight") is not None else None
        model.languages = tuple(str(lang) for lang in card["languages"]) if card.get("languages") else None
        return model

    @metrics.timed("rerank")
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        out: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._batch(query, list(texts[start:start + self.batch_size])))
        return out

    def _batch(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        with self._lock:
            encoded = self._tokenizer.encode_batch([(query, text) for text in texts])
        feed = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
        }
        logits = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        return [float(v) for v in np.asarray(logits, dtype=np.float32).reshape(len(texts), -1)[:, 0]]


def _card(folder: Path) -> dict[str, Any]:
    """The folder's ``card.json`` (written by scripts/train_reranker.py), or nothing."""
    path = folder / "card.json"
    if not path.is_file():
        return {}
    body = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(body, dict):
        raise ValueError(f"{path} is not a JSON object")
    return body
