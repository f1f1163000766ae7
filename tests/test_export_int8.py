"""How `bertkit export --quantize int8` builds its graph (bertkit/exporting/graphs.py and
smoothing.py): the projections' roles found by shape in every encoder family, SmoothQuant that
leaves the fp32 graph's outputs as they were while it narrows the spread of the activations'
channels, and which roles stay fp32."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

LAYERS = 2


def _graph(folder: Path, family: str) -> Path:
    """A randomly initialised tiny classifier of `family`, exported as bertkit exports (TorchScript,
    opset 17); an outlier channel is put into its embeddings' LayerNorm, as pretrained BERTs have."""
    import torch
    import transformers

    config_class, model_class = {
        "bert": ("BertConfig", "BertForSequenceClassification"),
        "distilbert": ("DistilBertConfig", "DistilBertForSequenceClassification"),
        "roberta": ("RobertaConfig", "RobertaForSequenceClassification"),
        "electra": ("ElectraConfig", "ElectraForSequenceClassification"),
    }[family]
    sizes = (
        {"dim": 32, "hidden_dim": 64, "n_layers": LAYERS, "n_heads": 2}
        if family == "distilbert"
        else {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": LAYERS, "num_attention_heads": 2}
    )
    config = getattr(transformers, config_class)(vocab_size=99, max_position_embeddings=64, **sizes)
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config).eval()
    for name, weight in model.named_parameters():
        if "embeddings" in name.lower() and "norm" in name.lower() and name.endswith("weight"):
            with torch.no_grad():
                weight[3] = 25.0  # one channel far wider than the rest
    ids = torch.randint(5, 99, (2, 12))
    file = folder / f"{family}.onnx"
    torch.onnx.export(
        model, (ids, torch.ones_like(ids)), str(file), input_names=["input_ids", "attention_mask"],
        output_names=["logits"], dynamic_axes={"input_ids": {0: "b", 1: "t"}, "attention_mask": {0: "b", 1: "t"}},
        opset_version=17, dynamo=False,
    )  # fmt: skip
    return file


def _rows(count: int = 12) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(count):
        length = int(rng.integers(4, 20))
        ids = rng.integers(5, 99, (1, length)).astype(np.int64)
        rows.append({"input_ids": ids, "attention_mask": np.ones_like(ids)})
    return rows


@pytest.mark.parametrize("family", ["bert", "distilbert", "roberta", "electra"])
def test_every_family_projection_is_given_its_role(tmp_path, family):
    from bertkit.exporting.graphs import projection_roles

    roles = projection_roles(_graph(tmp_path, family))
    counts = {role: len(names) for role, names in roles.items()}
    projected = family == "electra"  # its embeddings (128 wide by default) are projected to the hidden size
    assert counts["attention-in"] == 3 * LAYERS + projected and counts["attention-out"] == LAYERS, counts
    assert counts["ffn-in"] == LAYERS and counts["ffn-out"] == LAYERS, counts
    assert counts["head"] >= 1, counts  # the classifier (and a pooler or a dense layer before it)


def test_smoothing_keeps_the_outputs_and_narrows_the_channels(tmp_path):
    import onnxruntime

    from bertkit.exporting.graphs import projection_roles
    from bertkit.exporting.smoothing import channel_maxima, smooth_graph

    source = _graph(tmp_path, "bert")
    roles = projection_roles(source)
    rows = _rows()
    chosen = roles["attention-in"] + roles["ffn-in"] + roles["attention-out"]
    target = tmp_path / "smoothed.onnx"
    assert smooth_graph(source, target, rows, chosen) == 3 * LAYERS  # q, k, v share one input
    nodes = onnx.load(str(target)).graph.node
    muls = [n for n in nodes if n.name.endswith("/smoothed")]
    assert len(muls) == 3 * LAYERS
    sessions = [onnxruntime.InferenceSession(str(f), providers=["CPUExecutionProvider"]) for f in (source, target)]
    for row in _rows(5):
        before, after = (s.run(None, row)[0] for s in sessions)
        np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-5)

    # the first layer's query input: its widest channel is no longer far wider than the rest
    first = next(n for n in onnx.load(str(source)).graph.node if n.name == roles["attention-in"][0])
    plain = channel_maxima(source, rows, [first.input[0]])[first.input[0]]
    smoothed = channel_maxima(target, rows, [f"{first.input[0]}/smoothed"])[f"{first.input[0]}/smoothed"]
    spread = [m.max() / np.median(m) for m in (plain, smoothed)]
    assert spread[1] < spread[0] / 2, spread


def test_a_smoothed_graph_that_no_longer_agrees_stops_the_export(tmp_path):
    from onnx import numpy_helper

    from bertkit.core.errors import BertkitError
    from bertkit.exporting.graphs import projection_roles
    from bertkit.exporting.smoothing import check_equivalent, smooth_graph

    source, target = _graph(tmp_path, "bert"), tmp_path / "smoothed.onnx"
    roles = projection_roles(source)
    smooth_graph(source, target, _rows(), roles["attention-in"])
    check_equivalent(source, target, _rows(3))  # as written: equivalent
    model = onnx.load(str(target))
    for divisor in [t for t in model.graph.initializer if t.name.endswith("/smoothing")]:
        divisor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(divisor) * 50, divisor.name))
    onnx.save(model, str(target))  # the divisors off: the products are no longer the fp32 ones
    with pytest.raises(BertkitError, match="no longer gives the fp32 graph's outputs"):
        check_equivalent(source, target, _rows(3))


def test_a_graph_with_nothing_to_smooth_is_copied(tmp_path):
    from bertkit.exporting.smoothing import smooth_graph

    source = _graph(tmp_path, "bert")
    assert smooth_graph(source, tmp_path / "same.onnx", _rows(), []) == 0
    assert onnx.load(str(tmp_path / "same.onnx")).graph == onnx.load(str(source)).graph


def test_an_embed_bundle_made_from_a_plain_encoder_exports_to_int8(tmp_path, tiny_model, cli):
    """A bundle written by hand around an encoder (bertkit.json with the task and pooling, no
    columns, no training record) is checked on a text / text_pair file, as `similarity` reads one."""
    import json
    import shutil

    bundle = tmp_path / "encoder"
    shutil.copytree(tiny_model, bundle)
    (bundle / "bertkit.json").write_text(json.dumps({"task": "embed", "pooling": "mean", "normalize": True}))
    pairs = tmp_path / "pairs.jsonl"
    words = ["alpha bravo", "kilo lima", "the film was", "delta echo golf"]
    pairs.write_text("".join(json.dumps({"text": a, "text_pair": b}) + "\n" for a in words for b in words if a != b))
    code, _, err = cli("export", "-m", bundle, "--quantize", "int8", "--check-data", pairs, "-o", tmp_path / "int8")
    assert code == 0, err
    record = json.loads((tmp_path / "int8" / "bertkit.json").read_text())["export"]
    assert record["check"]["int8"]["metric"] == "mrr" and record["check"]["int8"]["records"] == 12
