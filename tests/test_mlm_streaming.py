"""Streamed mlm-adapt (`data.streaming: true`, bertkit/tasks/mlm/streaming.py): the corpus is read
lazily and tokenized as training asks; validation is held out from its start; training needs
train.max_steps; the settings streaming cannot honour are refused before anything is read."""

import random

import pytest
from helpers.tiny import sentence


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = random.Random(5)
    path = tmp_path_factory.mktemp("stream") / "domain.txt"
    lines = [f"line {i} {sentence(rng, label)}" for i, label in enumerate(["positive", "negative"] * 200)]
    path.write_text("\n".join(lines) + "\n")
    return path


def config(tiny_model, corpus, **more):
    from bertkit.config import load_config

    sets = {
        "model.name": str(tiny_model),
        "model.max_length": 32,
        "data.train": str(corpus),
        "data.streaming": True,
        "data.max_eval_samples": 20,
        "train.max_steps": 3,
        **more,
    }
    return load_config(None, task="mlm-adapt", **sets)


def prepared(tiny_model, cfg):
    """(raw splits, features, info) as a training run makes them."""
    from bertkit.core.run_info import RunInfo
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks import get_task

    task = get_task("mlm-adapt")
    raw = task.training.load(cfg)
    info = RunInfo(task.training.setup(raw, cfg))
    tokenizer = load_tokenizer(str(tiny_model), None, False)
    info = info.replace(**task.training.tokenizer_facts(tokenizer, info))
    return raw, task.training.prepare(raw, tokenizer, info), info


def test_the_stream_is_lazy_and_skips_the_held_out_texts(tiny_model, corpus):
    import datasets

    raw, features, info = prepared(tiny_model, config(tiny_model, corpus))
    assert isinstance(raw["train"], datasets.IterableDataset)
    assert raw["validation"]["text"][0].startswith("line 0 ") and len(raw["validation"]) == 20
    assert next(iter(raw["train"]))["text"].startswith("line 20 ")  # training starts after them
    assert isinstance(features["train"], datasets.IterableDataset)
    blocks = list(features["train"].take(5))
    assert all(len(b["input_ids"]) == info["block_size"] for b in blocks)  # full blocks only
    assert len(features["validation"]) > 0 and "labels" in features["validation"].column_names


def test_lines_mode_streams_too(tiny_model, corpus):
    cfg = config(tiny_model, corpus, **{"mlm.mode": "lines", "data.max_train_samples": 7, "data.sample": "first"})
    rows = list(prepared(tiny_model, cfg)[1]["train"])
    assert len(rows) == 7  # one example a line, and only the first 7 lines


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ({"train.max_steps": None}, "needs train.max_steps"),
        ({"mlm.nsp": True}, "cannot stream"),
        ({"train.group_by_length": True}, "group_by_length"),
        ({"data.max_train_samples": 10}, "data.sample: first"),
    ],
)
def test_what_streaming_cannot_do_is_refused(tiny_model, corpus, sets, message):
    from bertkit.core.errors import BertkitError
    from bertkit.tasks import get_task

    cfg = config(tiny_model, corpus, **{k: v for k, v in sets.items() if v is not None})
    if sets.get("train.max_steps", 1) is None:
        cfg.train.max_steps = None
    with pytest.raises(BertkitError, match=message):
        get_task("mlm-adapt").training.load(cfg)


def test_cli_errors(tiny_model, corpus, tmp_path, cli):
    config_file = tmp_path / "run.yaml"
    config_file.write_text(
        f"model:\n  name: {tiny_model}\ndata:\n  train: {corpus}\n  streaming: true\noutput_dir: {tmp_path / 'out'}\n"
    )
    code, out, err = cli("train", "mlm-adapt", "-c", config_file)
    assert code == 2 and "needs train.max_steps" in out + err
    code, out, err = cli("train", "classify", "-c", config_file)
    assert code == 2 and "only plain-text training (mlm-adapt) streams" in out + err


def test_too_short_a_corpus_to_hold_out_validation(tiny_model, corpus):
    from bertkit.core.errors import BertkitError
    from bertkit.tasks import get_task

    with pytest.raises(BertkitError, match="all needed to hold out"):
        get_task("mlm-adapt").training.load(config(tiny_model, corpus, **{"data.max_eval_samples": 5000}))


@pytest.mark.slow
def test_streamed_training_runs_max_steps(tiny_model, corpus, tmp_path, cli):
    import json

    config_file = tmp_path / "run.yaml"
    config_file.write_text(
        f"model:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {corpus}\n  streaming: true\n  max_eval_samples: 40\n"
        "train:\n  max_steps: 4\n  batch_size: 8\n  eval_strategy: 'no'\n  learning_rate: 1.0e-3\n"
        f"output_dir: {tmp_path / 'out'}\n"
    )
    code, out, err = cli("train", "mlm-adapt", "-c", config_file)
    assert code == 0, out + err
    info = json.loads((tmp_path / "out" / "bertkit.json").read_text())
    assert info["training"]["train_steps"] == 4
    assert info["training"]["train_examples"] is None  # a stream has no length
    validation = info["metrics"]["validation"]
    assert validation["perplexity_after"] < validation["perplexity_before"]


def test_only_what_training_asks_for_is_read(tiny_model, tmp_path, monkeypatch):
    from bertkit.core.data import corpus as corpus_module
    from bertkit.tasks.mlm import streaming

    big = tmp_path / "big.txt"
    big.write_text("".join(f"line {i} the hotel was lovely and the film was great\n" for i in range(20000)))
    read = {"lines": 0}
    real = corpus_module.read_lines

    def counting(*args, **kwargs):
        for text in real(*args, **kwargs):
            read["lines"] += 1
            yield text

    monkeypatch.setattr(streaming, "read_lines", counting)
    _, features, _ = prepared(tiny_model, config(tiny_model, big))
    assert read["lines"] == 20  # the held-out validation texts, nothing more yet
    next(iter(features["train"]))
    # the first block waits for the shuffle buffer (1,000 blocks: ~3,000 of these lines), not for the file
    assert read["lines"] < 5000
