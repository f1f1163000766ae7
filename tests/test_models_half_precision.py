"""A model published in fp16 or bf16 trains and runs in float32: transformers 5 would load it in
the dtype of its files, and AdamW's updates on half-precision weights are rounded away."""

import json

import pytest


@pytest.fixture(scope="module", params=["float16", "bfloat16"])
def half_model(request, tiny_model, tmp_path_factory):
    import shutil

    import torch
    from transformers import AutoModel

    folder = tmp_path_factory.mktemp(request.param)
    shutil.copytree(tiny_model, folder, dirs_exist_ok=True)
    AutoModel.from_pretrained(tiny_model).to(getattr(torch, request.param)).save_pretrained(folder)
    assert AutoModel.from_pretrained(folder).dtype == getattr(torch, request.param)  # as transformers loads it
    return folder


@pytest.mark.slow
def test_a_half_precision_checkpoint_trains_in_float32_and_learns(half_model, easy_data, tmp_path, cli):
    from safetensors import safe_open

    out = tmp_path / "model"
    path = tmp_path / "run.yaml"
    path.write_text(
        f"task: classify\nmodel:\n  name: {half_model}\n  max_length: 32\n"
        f"data:\n  train: {easy_data['train']}\n  validation: {easy_data['test']}\n"
        f"train:\n  epochs: 6\n  batch_size: 16\n  learning_rate: 3.0e-3\n  warmup_ratio: 0.0\noutput_dir: {out}\n"
    )
    code, _, err = cli("train", "classify", "-c", str(path))
    assert code == 0, err
    with safe_open(str(out / "model.safetensors"), "pt") as weights:
        assert {str(weights.get_tensor(k).dtype) for k in weights.keys()} == {"torch.float32"}
    # and it learned the keyword task, as the float32 model does in tests/test_classify_e2e.py
    info = json.loads((out / "bertkit.json").read_text())
    assert info["metrics"]["validation"]["accuracy"] >= 0.85, info["metrics"]


def test_vectors_of_a_half_precision_checkpoint_are_computed_in_float32(half_model, tiny_model):
    import numpy as np

    from bertkit.core.pooling import unit_vectors
    from bertkit.tasks.embed.encoder import load_encoder

    texts = ["a great film", "an awful meal", "the phone was quite boring"]
    half = load_encoder(str(half_model), "mean", True, 32)
    assert {str(p.dtype) for p in half.model.parameters()} == {"torch.float32"}
    vectors = unit_vectors(half, texts, 8)
    full = unit_vectors(load_encoder(str(tiny_model), "mean", True, 32), texts, 8)
    # the same weights, rounded to 16 bits once: the same vectors up to that rounding
    assert vectors.dtype == np.float32 and np.abs(vectors - full).max() < 0.05
