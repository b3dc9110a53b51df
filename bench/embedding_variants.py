"""A cheap screen of cheaper ways to embed a filing's units: CPU per unit and cosine to the float graph.

    .venv/bin/python bench/embedding_variants.py [--doc PFIZER_2021_10K] [--units 2500] [--rounds 2]

The bundled MiniLM's exported graph (``onnx_encoder.load_graph``) against variants of it, each run on the
same units (a stride sample of the filing's ``sentence_units``), one ONNX Runtime thread, one batch at a
time, the rounds alternating the variants (CPU = the process's, medians):

  float          the graph as exported (the default)
  int8           every weight matrix product int8 per channel (``onnx_encoder.quantized``, the setting's)
  int8 ffn       only the feed-forward products (intermediate and output dense) int8
  int8 not last  every product int8 but the last layer's
  int8 no qkv    every product int8 but the attention's query, key and value
  int8 but KIND  every product int8 but one kind's (``KINDS``: query, key, value, attention out, ffn in,
                 ffn out): which products carry the error
  static qdq     ONNX Runtime's static QDQ quantization of the weight products, per channel, calibrated
                 (MinMax) on units of documents in no QA set (``../shared/corpus/docs``)
  nbits8, nbits4 every product as MatMulNBits of 8- or 4-bit blocks of 32 inputs (``nbits8 b128``: of 128,
                 as ``MCP_EMBEDDING_PRECISION=int8-blocks`` serves), activations int8 per block
  digits out     the float graph on the units' dense text without runs of digits and punctuation
                 (its cosine is to the float vectors of the full units)

Cosine: each unit's vector against the float graph's (mean, min, 1st percentile). Nothing is cached.

Quality of one variant: ``--serve VARIANT SCRIPT ARGS...`` runs another bench script (financebench.py,
squad.py, build_stages.py) in this process with the variant in the server's place: a graph variant is served
as the int8 graph (run it with ``MCP_EMBEDDING_PRECISION=int8``) under a model id of its own
(``@<variant>``: the bench's embedding cache never mixes it with another's); ``digits out`` changes the text
that the dense index embeds for each unit (the chunks, BM25 and results stay as they are).
``--serve-documents``: the same, but the queries are embedded by the float graph (asymmetric: only the
documents' vectors carry the quantization error; model id ``@<variant>-documents``).

    MCP_EMBEDDING_PRECISION=int8 .venv/bin/python bench/embedding_variants.py \\
        --serve-documents "int8 no qkv" bench/financebench.py --set dev --no-reference --modes hybrid
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.build_stages import _find  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "docs"
CALIBRATION_DOCS = ["txt/book-war-and-peace-1225p.txt", "pdf/2305.03393v1-pg9.pdf", "html/wiki_duck.html",
                    "html/what_is_haystack.html", "html/example-10k-1p.html", "txt/norwich-city.txt",
                    "pdf/2206.01062_pg3.pdf"]
# a run of two or more characters that are digits, punctuation or symbols (a figure, a dash row, "(1,234)")
NUMBER_RUN = re.compile(r"(?<!\w)[\d\W_]*\d[\d\W_]*(?!\w)|[^\w\s]{2,}")


def units_of(path: Path) -> list[str]:
    from mcp_server.chunking import chunk_document
    from mcp_server.core.models import FetchedDocument
    from mcp_server.core.settings import Settings
    from mcp_server.embedding.registry import ModelRegistry
    from mcp_server.pipeline.service import Chunking
    from mcp_server.processors import ProcessOptions, document_input, process_document
    from mcp_server.text.sentences import sentence_units

    settings = Settings(log_dir=None, instruction_detection=False)
    models = ModelRegistry.load(settings)
    fetched = FetchedDocument(data=path.read_bytes(), url=path.as_uri(), final_url=path.as_uri(), filename=path.name)
    document = process_document(document_input(fetched), ProcessOptions.from_settings(settings))
    chunks = chunk_document(document, Chunking(models).params(document), models.token_counter)
    return sentence_units(chunks)[0]


def stripped(text: str) -> str:
    """The dense text without runs of digits and punctuation (a unit that would be left empty stays)."""
    out = re.sub(r"\s+", " ", NUMBER_RUN.sub(" ", text)).strip()
    return out if len(out) >= 3 else text


def matmuls(graph: Path) -> list[str]:
    import onnx

    model = onnx.load(str(graph), load_external_data=False)
    weights = {init.name for init in model.graph.initializer}
    return [node.name for node in model.graph.node if node.op_type == "MatMul" and node.input[1] in weights]


def dynamic(graph: Path, target: Path, nodes: Sequence[str]) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(graph), str(target), weight_type=QuantType.QInt8, per_channel=True,
                     nodes_to_quantize=list(nodes), extra_options={"DefaultTensorType": 1})
    return target


def blockwise(graph: Path, target: Path, nodes: Sequence[str], *, bits: int, block: int = 32) -> Path:
    """Each weight product as ONNX Runtime's MatMulNBits: weights in ``bits``-bit blocks of ``block`` inputs
    (symmetric, a scale per block), activations quantized to int8 per block of the row (``accuracy_level``
    4) instead of per tensor as the dynamic quantizer does."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(graph))
    weights = {init.name: init for init in model.graph.initializer}
    wanted = set(nodes)
    levels = 2 ** (bits - 1)  # the zero point: 8 for 4 bits, 128 for 8
    for i, node in enumerate(model.graph.node):
        if node.name not in wanted:
            continue
        dense = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)  # (K, N)
        k, n = dense.shape
        blocks = dense.T.reshape(n, k // block, block)
        scales = np.maximum(np.abs(blocks).max(axis=-1), 1e-12) / (levels - 1)
        q = (np.clip(np.rint(blocks / scales[..., None]), -(levels - 1), levels - 1) + levels).astype(np.uint8)
        if bits == 4:
            q = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
        qw, sc = f"{node.name}_qw", f"{node.name}_scale"
        model.graph.initializer.extend([numpy_helper.from_array(np.ascontiguousarray(q), qw),
                                        numpy_helper.from_array(scales.astype(np.float32).reshape(-1), sc)])
        model.graph.node[i].CopyFrom(helper.make_node(
            "MatMulNBits", [node.input[0], qw, sc], list(node.output), name=node.name, domain="com.microsoft",
            K=k, N=n, bits=bits, block_size=block, accuracy_level=4))
    used = {name for node in model.graph.node for name in node.input}
    keep = [init for init in model.graph.initializer if init.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(target))
    return target


def static(graph: Path, target: Path, nodes: Sequence[str], feeds: list[dict[str, np.ndarray]]) -> Path:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._feeds = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._feeds, None)

    quantize_static(str(graph), str(target), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8, nodes_to_quantize=list(nodes),
                    calibrate_method=CalibrationMethod.MinMax,
                    extra_options={"DefaultTensorType": 1})
    return target


# the kinds of weight products in a BERT layer, as the exporter names them
KINDS = {"query": r"/self/query/", "key": r"/self/key/", "value": r"/self/value/",
         "attention out": r"/attention/output/dense/", "ffn in": r"/intermediate/dense/",
         "ffn out": r"layer\.\d+/output/dense/"}


def variant_graph(graph: Path, variant: str, folder: Path, products: Sequence[str]) -> Path:
    """The graph of a dynamic int8 ``variant`` of ``graph`` (made in ``folder`` unless there already)."""
    target = folder / f"{graph.stem}-{variant.replace(' ', '-')}.onnx"
    if variant.startswith("nbits"):  # "nbits8", "nbits4 b128": bits, then the block size (32 unless given)
        bits, _, size = variant.removeprefix("nbits").partition(" b")
        return target if target.is_file() else blockwise(graph, target, products, bits=int(bits),
                                                         block=int(size or 32))
    if variant.startswith("int8 but "):  # every product int8 but one kind's (a sensitivity screen)
        kind = re.compile(KINDS[variant.removeprefix("int8 but ")])
        return target if target.is_file() else dynamic(graph, target, [n for n in products if not kind.search(n)])
    keep = {"int8 ffn": lambda n: "/attention/" not in n, "int8 no qkv": lambda n: "/self/" not in n,
            "int8 not last": lambda n: f"layer.{_last_layer(products)}/" not in n, "int8": lambda n: True}[variant]
    return target if target.is_file() else dynamic(graph, target, [n for n in products if keep(n)])


def _last_layer(products: Sequence[str]) -> int:
    return max(int(m) for m in re.findall(r"layer\.(\d+)/", " ".join(products)))


def float_queries() -> None:
    """Queries of an int8 graph's embedder embedded by the float graph instead (documents stay int8)."""
    from mcp_server.encoders import onnx_encoder
    from mcp_server.encoders.embedders import SentenceTransformerEmbedder

    plain: dict[int, Any] = {}  # id of an int8 graph's encoder -> the float graph's
    open_served, embed_queries = onnx_encoder._open_served, SentenceTransformerEmbedder.embed_queries

    def opened(path: Path, threads: int | None, ort: Any, *, int8: bool = False) -> Any:
        served = open_served(path, threads, ort, int8=int8)
        if served.int8:
            plain[id(served.encoder)] = open_served(path, threads, ort).encoder
        return served

    def queries(self: Any, texts: Any) -> Any:
        encoder = plain.get(id(self.onnx))
        if encoder is None:
            return embed_queries(self, texts)
        return encoder.encode([self.query_prefix + text for text in texts], batch_size=self.batch_size)

    setattr(onnx_encoder, "_open_served", opened)  # noqa: B010 - a bench's patch of a private function
    setattr(SentenceTransformerEmbedder, "embed_queries", queries)  # noqa: B010


def serve(variant: str, argv: list[str], *, float_query: bool = False) -> None:
    """Run the bench script ``argv[0]`` with ``variant`` in the server's place (see the module's doc)."""
    import runpy

    from mcp_server.encoders import onnx_encoder

    if float_query:
        float_queries()

    if variant == "digits out":
        from mcp_server.indexes import partial
        from mcp_server.retrieval import vectors
        from mcp_server.text.sentences import sentence_units

        def dense_units(chunks: Any) -> tuple[list[str], Any]:
            texts, owners = sentence_units(chunks)
            return [stripped(text) for text in texts], owners

        setattr(vectors, "sentence_units", dense_units)  # noqa: B010 - the bench's patch
        setattr(partial, "sentence_units", dense_units)  # noqa: B010
    else:
        slug = variant.replace(" ", "-")
        made = onnx_encoder.quantized

        def quantized(path: Path) -> Path | None:
            if variant == "int8":
                return made(path)
            folder = Path(tempfile.gettempdir()) / "bench-variants"  # kept for the next run: delete when done
            folder.mkdir(exist_ok=True)
            return variant_graph(path, variant, folder, matmuls(path))

        setattr(onnx_encoder, "quantized", quantized)  # noqa: B010 - the bench's patch
        # a model id of its own: the bench's embedding cache keeps every variant's vectors apart
        setattr(onnx_encoder, "INT8_SUFFIX", f"@{slug}" + ("-documents" if float_query else ""))  # noqa: B010
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


def main() -> None:
    if len(sys.argv) > 3 and sys.argv[1] in ("--serve", "--serve-documents"):
        serve(sys.argv[2], sys.argv[3:], float_query=sys.argv[1] == "--serve-documents")
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--doc", default="PFIZER_2021_10K")
    parser.add_argument("--units", type=int, default=2500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default="float,int8,int8 ffn,int8 not last,int8 no qkv,static qdq,digits out")
    args = parser.parse_args()
    import onnxruntime as ort

    from mcp_server.embedding.registry import MINILM_ID, _bundled_minilm
    from mcp_server.encoders.onnx_encoder import _cache_path, _encoder, _session_options, load_graph, local_folder
    from mcp_server.encoders.onnx_encoder import quantized as int8_graph
    from mcp_server.text.sentences import chunk_units

    source = _bundled_minilm() or MINILM_ID
    served, why = load_graph(source, threads=1)
    if served is None:
        raise SystemExit(why)
    folder = local_folder(source)
    assert folder is not None
    graph = _cache_path(str(folder), None)
    tokenize = served.encoder._tokenize
    names = served.encoder._inputs
    all_units = units_of(_find(args.doc))
    step = max(1, len(all_units) // args.units)
    units = all_units[::step][: args.units]
    token_count = _tokens(served.tokenizer, units)
    variants = [v.strip() for v in args.variants.split(",")]
    products = matmuls(graph)
    tmp = Path(tempfile.mkdtemp(prefix="bench-variants-"))
    made: dict[str, tuple[Path, list[str]]] = {}
    for variant in variants:
        if variant in ("float", "digits out"):
            made[variant] = (graph, units if variant == "float" else [stripped(u) for u in units])
        elif variant == "int8":
            quantized = int8_graph(graph)
            assert quantized is not None
            made[variant] = (quantized, units)
        elif variant in ("int8 ffn", "int8 not last", "int8 no qkv") or variant.startswith(("int8 but ", "nbits")):
            made[variant] = (variant_graph(graph, variant, tmp, products), units)
        elif variant == "static qdq":
            calibration = [u for name in CALIBRATION_DOCS for u in calibration_units(CORPUS / name, chunk_units)]
            # one shape for every batch (the percentile calibrator stacks them): padded to 128 tokens
            feeds = [{name: _padded(features[name], 128) for name in names}
                     for features in (tokenize(calibration[i:i + 16]) for i in range(0, len(calibration), 16))]
            print(f"calibration: {len(calibration)} units of {len(CALIBRATION_DOCS)} documents", flush=True)
            made[variant] = (static(graph, tmp / "qdq.onnx", products, feeds), units)
    options = _session_options(1)
    encoders = {v: _encoder(path, options, tokenize, names, ort) for v, (path, _) in made.items()}
    shutil.rmtree(tmp, ignore_errors=True)  # the sessions hold the graphs
    for encoder in encoders.values():
        encoder.streams = 1
    vectors: dict[str, np.ndarray] = {}
    cpu: dict[str, list[float]] = {v: [] for v in made}
    for _ in range(args.rounds):
        for variant, encoder in encoders.items():
            texts = made[variant][1]
            vectors[variant], seconds = _cpu(functools.partial(encoder.encode, texts, batch_size=32))
            cpu[variant].append(seconds)
    base = vectors.get("float")
    print(f"\n{args.doc}: {len(units):,} of {len(all_units):,} units, {token_count:,} tokens; "
          f"medians of {args.rounds}, load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| variant | tokens | CPU s | x float | cosine mean | min | p1 |\n|---|---:|---:|---:|---:|---:|---:|")
    for variant in made:
        texts = made[variant][1]
        tokens = _tokens(served.tokenizer, texts)
        seconds = statistics.median(cpu[variant])
        ratio = seconds / statistics.median(cpu["float"]) if "float" in cpu else float("nan")
        cos = np.sum(vectors[variant] * base, axis=1) if base is not None else np.array([np.nan])
        print(f"| {variant} | {tokens:,} | {seconds:.2f} | {ratio:.2f} | {cos.mean():.4f} | {cos.min():.4f} | "
              f"{np.percentile(cos, 1):.4f} |")


def calibration_units(path: Path, chunk_units: Callable[[str], list[str]]) -> list[str]:
    from mcp_server.core.models import FetchedDocument
    from mcp_server.core.settings import Settings
    from mcp_server.processors import ProcessOptions, document_input, process_document

    fetched = FetchedDocument(data=path.read_bytes(), url=path.as_uri(), final_url=path.as_uri(), filename=path.name)
    try:
        text = process_document(document_input(fetched), ProcessOptions.from_settings(Settings(log_dir=None))).content
    except Exception as exc:  # noqa: BLE001 - a document this machine cannot read calibrates nothing
        print(f"calibration: {path.name} skipped ({exc})", flush=True)
        return []
    return chunk_units(text[:60_000])[:150]


def _tokens(tokenizer: Any, texts: Sequence[str]) -> int:
    """Tokens the model reads (the served tokenizer pads: its attention mask counts them)."""
    return sum(sum(e.attention_mask) for e in tokenizer.encode_batch(list(texts)))


def _padded(ids: Any, width: int) -> np.ndarray:
    array = np.asarray(ids, dtype=np.int64)[:, :width]
    return np.pad(array, ((0, 0), (0, width - array.shape[1])))


def _cpu(fn: Callable[[], Any]) -> tuple[Any, float]:
    began = time.process_time()
    out = fn()
    return out, time.process_time() - began


if __name__ == "__main__":
    main()
