"""The GPU paths of inference, run on the CPU where torch allows it (no GPU here): batches sized by
tokens, padding done by bertkit, half precision. Their speed is measured by bench/gpu_speed.py on a
GPU; these tests hold what they must not change: the results."""

import random

import numpy as np
import pytest
from helpers.tiny import FILLER, NEGATIVE, POSITIVE


def _texts(n: int = 120, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(FILLER + POSITIVE + NEGATIVE, k=rng.choice([1, 2, 4, 9, 17, 30]))) for _ in range(n)]


def _features(tokenizer, texts, pairs=None):
    encoded = tokenizer(texts, pairs, truncation=True, max_length=64)
    return [dict(zip(encoded, values, strict=True)) for values in zip(*encoded.values(), strict=True)]


@pytest.fixture(scope="module")
def classifier(tiny_model):
    """The tiny BERT with a randomly initialised two-label head, and its tokenizer."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model, num_labels=2).eval()
    return model, AutoTokenizer.from_pretrained(tiny_model)


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize(("length", "multiple"), [(None, None), (None, 8), (72, None)])
def test_padding_gives_what_the_tokenizer_gives(tiny_model, side, length, multiple):
    from transformers import AutoTokenizer

    from bertkit.core.inference import pad_batch

    tokenizer = AutoTokenizer.from_pretrained(tiny_model, padding_side=side)
    rows = _features(tokenizer, _texts(12), _texts(12, seed=4))  # pairs: token types 0 and 1
    names = [n for n in tokenizer.model_input_names if n in rows[0]]
    assert "token_type_ids" in names
    ours = pad_batch(tokenizer, rows, names, length, multiple)
    padding = {"padding": "max_length", "max_length": length} if length else {}
    theirs = tokenizer.pad(rows, return_tensors="np", pad_to_multiple_of=multiple, **padding)
    for name in names:
        assert ours[name].dtype == np.int64
        np.testing.assert_array_equal(ours[name], theirs[name])
    if multiple:
        assert ours["input_ids"].shape[1] % multiple == 0


def test_token_batches_hold_about_the_budget_longest_first():
    from bertkit.core.inference import token_batches

    lengths = [3, 70, 12, 12, 40, 9, 64, 1, 33, 8] * 7
    features = [{"input_ids": [0] * n} for n in lengths]
    order = sorted(range(len(features)), key=lambda i: -lengths[i])
    batches = token_batches(features, order, tokens=256, multiple=8)
    assert [i for batch in batches for i in batch] == order  # every feature once, in order
    for batch in batches:
        width = -(-max(lengths[i] for i in batch) // 8) * 8
        assert len(batch) * width <= 256 or len(batch) == 1
        assert lengths[batch[0]] == max(lengths[i] for i in batch)
    assert len(batches[-1]) > len(batches[0])  # short texts: more rows a batch
    assert token_batches(features, order, tokens=4, multiple=8)[0] == [order[0]]  # one row at least


def test_gpu_style_batches_give_the_cpu_results(classifier, monkeypatch):
    """The batching a CUDA GPU gets (tokens, pad to a multiple of 8), forced on the CPU: the same
    logits as the CPU's fixed shapes, to float rounding (batches of other shapes sum in other orders)."""
    from bertkit.core import inference

    model, tokenizer = classifier
    features = _features(tokenizer, _texts())
    fixed = np.stack(inference.forward(model, tokenizer, features, 32))
    monkeypatch.setattr(inference, "batching", lambda device: "tokens")
    monkeypatch.setattr(inference, "GPU_BATCH_TOKENS", 200)  # several batches of several shapes
    assert len(inference.token_batches(features, list(range(len(features))), 200)) > 3
    tokens = np.stack(inference.forward(model, tokenizer, features, 32))
    np.testing.assert_allclose(tokens, fixed, rtol=0, atol=1e-5)
    assert (tokens.argmax(-1) == fixed.argmax(-1)).all()


def test_embeddings_in_gpu_style_batches_match(tiny_model, monkeypatch):
    from bertkit.core import inference
    from bertkit.tasks.embed.encoder import load_encoder

    encoder = load_encoder(str(tiny_model), device="cpu")
    texts = _texts(60)
    fixed = encoder.encode(texts)
    monkeypatch.setattr(inference, "batching", lambda device: "tokens")
    monkeypatch.setattr(inference, "GPU_BATCH_TOKENS", 160)
    tokens = encoder.encode(texts)
    cosine = (fixed * tokens).sum(1) / (np.linalg.norm(fixed, axis=1) * np.linalg.norm(tokens, axis=1))
    assert cosine.min() > 0.99999


def test_half_precision_keeps_labels_and_bounds_scores(classifier):
    """bf16 weights on the CPU (the GPU default where the GPU has bf16): the labels of fp32, scores
    within a small bound. bench/gpu_speed.py measures the same on a GPU and real models."""
    import copy

    import torch

    from bertkit.core import inference

    model, tokenizer = classifier
    model = copy.deepcopy(model)
    with torch.no_grad():  # a random head's logits all sit near 0: spread them as a trained head's are
        model.classifier.weight.mul_(40)
    features = _features(tokenizer, _texts(200, seed=5))
    full = inference.softmax(np.stack(inference.forward(model, tokenizer, features, 32)))
    half_model = inference.in_precision(copy.deepcopy(model), "bf16")
    assert next(half_model.parameters()).dtype.is_floating_point and str(next(half_model.parameters()).dtype) == (
        "torch.bfloat16"
    )
    half = inference.softmax(np.stack(inference.forward(half_model, tokenizer, features, 32)))
    assert half.dtype == np.float32  # handed on as fp32 whatever the model ran in
    margin = np.abs(full[:, 0] - full[:, 1])
    clear = margin > 0.05  # a random head leaves some texts on a knife's edge
    assert clear.sum() > 50
    assert (half.argmax(-1) == full.argmax(-1))[clear].all()
    assert np.abs(half - full).max() < 0.03


def test_half_precision_embeddings_stay_close(tiny_model):
    from bertkit.tasks.embed.encoder import load_encoder

    texts = _texts(60)
    full = load_encoder(str(tiny_model), device="cpu").encode(texts)
    half = load_encoder(str(tiny_model), device="cpu", precision="bf16").encode(texts)
    assert half.dtype == np.float32
    cosine = (full * half).sum(1) / (np.linalg.norm(full, axis=1) * np.linalg.norm(half, axis=1))
    assert cosine.min() > 0.999


def test_which_precision_a_device_gets(monkeypatch):
    import torch

    from bertkit.core import inference
    from bertkit.core.errors import BertkitError

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert inference.precision_for("auto", cpu) == "fp32"  # the CPU default is unchanged
    assert inference.precision_for("bf16", cpu) == "bf16"  # asked for: honoured
    monkeypatch.setattr(inference, "gpu_half", lambda: "bf16")
    assert inference.precision_for("auto", cuda) == "bf16"
    assert inference.precision_for("fp32", cuda) == "fp32"
    monkeypatch.setattr(inference, "gpu_half", lambda: "fp16")  # a GPU older than Ampere
    assert inference.precision_for("auto", cuda) == "fp16"
    with pytest.raises(BertkitError, match="this GPU has no bf16"):
        inference.precision_for("bf16", cuda)
    with pytest.raises(BertkitError, match="--precision fp8: use one of auto, fp32, bf16, fp16"):
        inference.precision_for("fp8", cpu)
    assert inference.batching(cpu) == "fixed" and inference.batching(cuda) == "tokens"
    assert inference.batching(None) == "rows" and inference.batching(torch.device("mps")) == "rows"


def test_half_precision_is_refused_for_onnx_bundles(tmp_path):
    from bertkit.core.errors import BertkitError
    from bertkit.tasks.bundle import refuse_half_onnx

    refuse_half_onnx("auto", tmp_path)
    refuse_half_onnx("fp32", tmp_path)
    with pytest.raises(BertkitError, match="ONNX bundle, which runs as it was exported"):
        refuse_half_onnx("bf16", tmp_path)


@pytest.mark.slow
def test_predict_in_bf16_writes_fp32s_labels(cli, tmp_path, classify_bundle):
    import json

    texts = tmp_path / "in.txt"
    texts.write_text("\n".join(_texts(80, seed=9)) + "\n")
    lines = {}
    for precision in ("fp32", "bf16", "auto"):
        out = tmp_path / f"{precision}.jsonl"
        code, _, err = cli("predict", "-m", classify_bundle, "-i", texts, "-o", out, "--precision", precision)
        assert code == 0, err
        lines[precision] = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines["auto"] == lines["fp32"]  # on a CPU auto is fp32
    assert [r["label"] for r in lines["bf16"]] == [r["label"] for r in lines["fp32"]]
    assert max(abs(a["score"] - b["score"]) for a, b in zip(lines["bf16"], lines["fp32"], strict=True)) < 0.02
    code, _, err = cli("predict", "-m", classify_bundle, "-i", texts, "--precision", "half")
    assert code == 2 and "--precision half: use one of auto, fp32, bf16, fp16" in err
