"""An exported graph's weight products as int8 blocks (ONNX Runtime's ``MatMulNBits``, 8 bits).

The dynamic quantizer (``onnx_encoder.quantized``) scales each product's activations by one number for the
whole batch, which costs MiniLM a cosine of ~0.992 to its float vectors and a little ranking quality.
``MatMulNBits`` with ``accuracy_level`` 4 quantizes the activations per block of ``BLOCK`` inputs of each
row instead, and the weights per block of the same inputs (symmetric, a scale per block): on a 10-K's
sentences a cosine of 0.999 to the float vectors (min 0.996) for ~0.75-0.8x of the float graph's CPU
(bench/embedding_variants.py; bench/HISTORY.md 2026-11-29, cold9). Written by hand: ONNX Runtime's own
``MatMulNBitsQuantizer`` needs the ``onnx_ir`` package and writes the same nodes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

BLOCK = 128  # inputs per block: MiniLM's 384 and 1,536 divide by it; 32 measured 0.9996 but ~0.85x the CPU
BITS = 8


def blockwise(graph: Path, target: Path, *, block: int = BLOCK) -> None:
    """Write ``graph`` to ``target`` with every product by a weight matrix (a MatMul whose second input
    is an initializer of inputs divisible by ``block``) as a ``MatMulNBits`` of int8 blocks."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(graph))
    weights = {init.name: init for init in model.graph.initializer}
    zero = 2 ** (BITS - 1)  # MatMulNBits' default zero point: the values are stored offset by it
    for i, node in enumerate(model.graph.node):
        if node.op_type != "MatMul" or node.input[1] not in weights:
            continue
        dense = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)  # (inputs, outputs)
        if dense.ndim != 2 or dense.shape[0] % block:
            continue
        k, n = dense.shape
        blocks = dense.T.reshape(n, k // block, block)
        scales = np.maximum(np.abs(blocks).max(axis=-1), 1e-12) / (zero - 1)
        values = np.clip(np.rint(blocks / scales[..., None]), 1 - zero, zero - 1) + zero
        qw, sc = f"{node.name}_int8_blocks", f"{node.name}_int8_scales"
        model.graph.initializer.extend([numpy_helper.from_array(values.astype(np.uint8), qw),
                                        numpy_helper.from_array(scales.astype(np.float32).reshape(-1), sc)])
        model.graph.node[i].CopyFrom(helper.make_node(
            "MatMulNBits", [node.input[0], qw, sc], list(node.output), name=node.name, domain="com.microsoft",
            K=k, N=n, bits=BITS, block_size=block, accuracy_level=4))
    used = {name for node in model.graph.node for name in node.input}
    kept = [init for init in model.graph.initializer if init.name in used]  # the float weights go
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(target))
