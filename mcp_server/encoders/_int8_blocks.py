"""A graph's weight products as int8 blocks (ONNX Runtime's ``MatMulNBits``, 8 bits, ``accuracy_level`` 4):
activations and weights scaled per block of ``BLOCK`` inputs, not per batch as the dynamic quantizer does
(MiniLM: cosine ~0.999 to the float vectors, not ~0.992, for ~0.75-0.8x the float CPU; bench/HISTORY.md
2026-11-29, cold9). By hand: ONNX Runtime's ``MatMulNBitsQuantizer`` needs ``onnx_ir`` for the same nodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

BLOCK = 128  # inputs per block: MiniLM's 384 and 1,536 divide by it; 32 measured 0.9996 but ~0.85x the CPU


def blockwise(graph: Path, target: Path, *, block: int = BLOCK) -> None:
    """``graph`` to ``target`` with each product by a weight matrix (rows divisible by ``block``) in int8 blocks."""
    import onnx
    from onnx import helper, numpy_helper
    model = onnx.load(str(graph))
    weights = {init.name: init for init in model.graph.initializer}
    zero = 128  # MatMulNBits' default zero point for 8 bits: the values are stored offset by it
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
            K=k, N=n, bits=8, block_size=block, accuracy_level=4))
    used = {name for node in model.graph.node for name in node.input}
    kept = [init for init in model.graph.initializer if init.name in used]  # the float weights go
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(target))
