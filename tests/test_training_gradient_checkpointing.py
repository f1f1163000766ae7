"""`train.gradient_checkpointing: true` (activations recomputed in the backward pass): every way of
training takes it (a plain model, the embed task's pair wrapper, a LoRA adapter on a frozen base),
the weights still move, and transformers' warning about its old method name is not shown."""

from __future__ import annotations

import json
import warnings

import pytest

pytestmark = pytest.mark.slow


def _pairs(path, n: int):
    words = "alpha bravo charlie delta echo foxtrot golf hotel".split()
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            a, b = words[i % 8], words[(i * 3 + 1) % 8]
            handle.write(json.dumps({"query": f"about {a} {b}", "passage": f"the film {a} was {b}"}) + "\n")
    return path


@pytest.mark.parametrize("run", ["classify", "embed", "classify-lora"])
def test_training_with_checkpointed_activations(run, tiny_model, easy_data, tmp_path):
    import torch
    from safetensors.torch import load_file

    from bertkit.config import load_config
    from bertkit.training import train

    task = run.split("-")[0]
    data = (
        f"data: {{train: {easy_data['train']}}}\nclassify: {{strategy: finetune}}\n"
        if task == "classify"
        else f"data: {{train: {_pairs(tmp_path / 'pairs.jsonl', 32)}, text_column: query, text_pair_column: passage}}\n"
    )
    adapter = ", adapter: {kind: lora, r: 4, alpha: 8, dropout: 0.0}" if run.endswith("lora") else ""
    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: {task}\nmodel: {{name: {tiny_model}, max_length: 32}}\n{data}"
        f"train: {{max_steps: 2, batch_size: 8, eval_strategy: 'no', gradient_checkpointing: true{adapter}}}\n"
        f"output_dir: {tmp_path / 'out'}\n"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bundle = train(load_config(str(config)))[0]
    said = [str(w.message) for w in caught if "checkpointing" in str(w.message)]
    assert not said, said
    info = json.loads((bundle / "bertkit.json").read_text())
    assert info["config"]["train"]["gradient_checkpointing"] is True
    if run.endswith("lora"):  # the adapter's own weights moved from their start (B starts at zero)
        saved = load_file(str(bundle / "adapter_model.safetensors"))
        assert any(name.endswith("lora_B.weight") and torch.count_nonzero(t) for name, t in saved.items())
    else:
        before = load_file(str(tiny_model / "model.safetensors"))
        after = load_file(str(bundle / "model.safetensors"))
        name = next(n for n in before if n.endswith("encoder.layer.0.attention.self.query.weight"))
        moved = next(n for n in after if n.endswith("encoder.layer.0.attention.self.query.weight"))
        assert not torch.equal(before[name], after[moved])
