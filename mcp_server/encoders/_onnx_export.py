"""Export a sentence-transformers model to ONNX, in a process of its own (run by ``onnx_encoder.py``).

    python -I _onnx_export.py SOURCE OUT [--local-files-only]

Tracing a model leaves a few hundred megabytes behind in the process that traces it (the
exporter's modules and the traced graph); in this short-lived child they are gone when it exits,
and the server keeps only the ONNX Runtime session. The graph goes from token ids to the model's
sentence vector: the transformer, its mean or CLS pooling, then L2 normalisation. Prints one JSON
line: ``{"inputs": [names]}`` or ``{"error": reason}`` (exit status 1). A Hugging Face token, when
needed, comes from the environment (HF_TOKEN), never from the command line.

Imports only the standard library at module level: the parent imports ``unsupported`` from here
without loading the exporter.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Sequence
from typing import Any

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
SAMPLE = "What were the total revenues in the second quarter of 2023, and how did they change?"
# texts whose vectors a graph must reproduce: casing, spaces around, other scripts, and longer than
# any window (truncation must match too)
PROBES = ("query: a", SAMPLE, "  Revenue GREW by 4 %\tin Q2  ",
          "Qu'est-ce que le chiffre d'affaires ? 营业收入是多少？", " ".join(["long"] * 600))


def unsupported(model: Any) -> str | None:
    """Why ``model`` (a SentenceTransformer) cannot be exported as a pooled graph, or None."""
    modules = list(model)
    kinds = [type(module).__name__ for module in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return f"the model's modules {kinds} are not a transformer with pooling"
    mode = _pooling_mode(modules[1])
    if mode not in ("mean", "cls"):
        return f"pooling {mode!r} is not mean or cls"
    if _config(modules[1]).get("include_prompt") is False:
        return "the pooling excludes the prompt"
    if getattr(modules[0], "auto_model", None) is None:
        return "the transformer module has no auto_model"
    return None


def tokenizer_of(model: Any) -> Any:
    """preprocess() is tokenize()'s newer name in sentence-transformers: the same truncation and casing."""
    return getattr(model, "preprocess", None) or model.tokenize


def input_names(model: Any) -> list[str]:
    sample = tokenizer_of(model)(["a"])
    return [name for name in INPUTS if name in sample]


def export(model: Any, out: str) -> list[str]:
    """Write ``model``'s pooled graph to the file ``out``; returns its input names."""
    import torch

    names = input_names(model)
    mode = _pooling_mode(model[1])
    backbone = model[0].auto_model

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.backbone: Any = backbone

        def forward(self, *inputs: Any) -> Any:
            features = dict(zip(names, inputs, strict=True))
            tokens = self.backbone(**features).last_hidden_state
            if mode == "cls":
                vector = tokens[:, 0]
            else:
                mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
                vector = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(vector, p=2.0, dim=1)

    sample = tokenizer_of(model)([SAMPLE])
    # the TorchScript exporter is deprecated in favour of torch.export, which needs the onnxscript
    # package; the tracer's warnings are about shapes that the dynamic axes cover
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Pooled().eval(), tuple(sample[name] for name in names), out, input_names=names,
            output_names=["vector"], dynamic_axes={name: {0: "batch", 1: "tokens"} for name in names},
            opset_version=17, dynamo=False,
        )
    return names


def encode_texts(tokenizer: Any, texts: Sequence[str], *, lower_case: bool, names: Sequence[str]) -> dict[str, Any]:
    """Token ids (int64 arrays, padded to the longest) from a ``tokenizers.Tokenizer`` set up by
    ``sidecar``: what the model's own tokenize() gives, without PyTorch."""
    import numpy as np

    encodings = tokenizer.encode_batch([text.lower() if lower_case else text for text in texts])
    columns = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
    return {name: np.array([getattr(e, columns[name]) for e in encodings], dtype=np.int64) for name in names}


def sidecar(model: Any, names: list[str]) -> dict[str, Any]:
    """What embedding through the graph needs besides it, without PyTorch: the tokenizer as the
    model runs it (the same ids on the probes, or ValueError), window, dimension, prompts, and
    PyTorch's vectors of the probes."""
    import numpy as np
    from tokenizers import Tokenizer

    hf = model.tokenizer
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        raise ValueError("the model's tokenizer is not a fast (Rust) tokenizer")
    tokenizer = Tokenizer.from_str(backend.to_str())
    tokenizer.enable_truncation(max_length=int(model.max_seq_length))
    tokenizer.enable_padding(pad_id=int(hf.pad_token_id or 0), pad_token=str(hf.pad_token),
                             pad_type_id=int(getattr(hf, "pad_token_type_id", 0) or 0))
    lower_case = bool(getattr(model[0], "do_lower_case", False))
    expected = tokenizer_of(model)(list(PROBES))
    got = encode_texts(tokenizer, PROBES, lower_case=lower_case, names=names)
    for name in names:
        if not np.array_equal(got[name], expected[name].numpy()):
            raise ValueError(f"the Rust tokenizer's {name} differ from the model's")
    vectors = model.encode(list(PROBES), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    prompts = {key: value for key, value in (getattr(model, "prompts", None) or {}).items() if isinstance(value, str)}
    return {"tokenizer": tokenizer.to_str(), "lower_case": lower_case, "max_tokens": int(model.max_seq_length),
            "dimension": int(vectors.shape[1]), "prompts": prompts, "probes": list(PROBES),
            "vectors": [[float(x) for x in row] for row in vectors]}


def _config(pooling: Any) -> dict[str, Any]:
    return pooling.get_config_dict() if hasattr(pooling, "get_config_dict") else {}


def _pooling_mode(pooling: Any) -> str | None:
    config = _config(pooling)
    return config.get("pooling_mode") or next(
        (name[len("pooling_mode_"):].removesuffix("_tokens") for name, on in config.items()
         if name.startswith("pooling_mode_") and on is True), None)


def main(argv: list[str]) -> int:
    source, out = argv[0], argv[1]
    try:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(1)  # the server is starting: its other loads share the cores
        model = SentenceTransformer(source, device="cpu", local_files_only="--local-files-only" in argv)
        model.eval()
        reason = unsupported(model)
        reply: dict[str, Any] = {"error": reason} if reason else {"inputs": export(model, out)}
        if "inputs" in reply:
            try:
                reply["sidecar"] = sidecar(model, reply["inputs"])
            except Exception as exc:  # noqa: BLE001 - the graph still serves, through PyTorch's tokenizer
                reply["sidecar_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which keeps PyTorch
        reply = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    print(json.dumps(reply), flush=True)
    return 1 if "error" in reply else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
