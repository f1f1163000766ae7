"""End to end through the CLI on a tiny random BERT built in the test: it must really learn."""

import csv
import json
import random

import pytest

pytestmark = pytest.mark.slow


def config(tmp_path, model, train, test=None, extra=""):
    path = tmp_path / "run.yaml"
    test_line = f"  test: {test}\n" if test else ""
    path.write_text(
        "task: classify\n"
        f"model:\n  name: {model}\n  max_length: 32\n"
        f"data:\n  train: {train}\n{test_line}"
        "train:\n  epochs: 6\n  batch_size: 16\n  learning_rate: 3.0e-3\n  warmup_ratio: 0.0\n"
        "  logging_steps: 5\n  seed: 7\n"
        f"output_dir: {tmp_path / 'model'}\n" + extra
    )
    return path


@pytest.fixture(scope="module")
def trained(learned_classify_bundle):
    """`config(...)` above with easy_data's train and test splits, trained once (tests/conftest.py)."""
    return learned_classify_bundle


def test_bundle_is_complete(trained):
    names = {p.name for p in trained.iterdir()}
    for expected in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "bertkit.json",
        "metrics.json",
        "training_curves.png",
        "confusion_matrix.png",
        "README.md",
    ):
        assert expected in names
    assert "training_args.bin" not in names
    assert not list(trained.parent.glob(".model.tmp-*")) and not (trained.parent / "model.partial").exists()
    info = json.loads((trained / "bertkit.json").read_text())
    assert info["task"] == "classify" and info["labels"] == ["negative", "positive"]
    assert info["config"]["train"]["epochs"] == 6 and "transformers" in info["versions"]
    hf = json.loads((trained / "config.json").read_text())
    assert hf["id2label"] == {"0": "negative", "1": "positive"}
    card = (trained / "README.md").read_text()
    assert "| accuracy |" in card and "![confusion matrix](confusion_matrix.png)" in card  # each picture it drew


def test_it_learned(trained):
    metrics = json.loads((trained / "metrics.json").read_text())
    assert metrics["test"]["accuracy"] >= 0.85, metrics["test"]
    assert len(metrics["test"]["confusion_matrix"]) == 2


def test_predict_jsonl_keeps_order(trained, cli, tmp_path):
    rng = random.Random(5)
    texts = [f"the film was {rng.choice(['great', 'awful'])} " + "really " * rng.randint(0, 20) for _ in range(50)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n")
    out = tmp_path / "out.jsonl"
    code, _, err = cli("predict", "-m", trained, "-i", source, "-o", out, "--batch-size", "7")
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["text"] for r in rows] == texts
    right = sum(r["label"] == ("positive" if "great" in r["text"] else "negative") for r in rows)
    assert right >= 45
    assert set(rows[0]["scores"]) == {"negative", "positive"}
    assert rows[0]["score"] == max(rows[0]["scores"].values())


def test_predict_csv_from_csv_and_windows(trained, cli, easy_data, tmp_path):
    out = tmp_path / "out.csv"
    code, _, err = cli(
        "predict", "-m", trained, "-i", easy_data["test"], "-o", out, "--long-text", "windows", "--stride", "4"
    )
    assert code == 0, err
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 80 and {"text", "label", "predicted_label", "score", "scores.positive"} <= set(rows[0])
    gold = [r["label"] for r in csv.DictReader(easy_data["test"].open())]
    assert [r["label"] for r in rows] == gold  # the input's gold labels, kept; the prediction beside them
    assert sum(r["predicted_label"] == r["label"] for r in rows) >= 68


def test_long_text_windows_average_every_window(trained, cli, tmp_path):
    from helpers.tiny import FILLER
    from transformers import AutoTokenizer

    from bertkit.core import tokenization

    tok = AutoTokenizer.from_pretrained(trained)
    text = " ".join((FILLER * 2)[:38]) + " great"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    pieces = tokenization.windows(ids, 30, 7)  # max_length 32 minus [CLS] and [SEP]; stride 30 // 4
    assert len(pieces) == 2
    source = tmp_path / "long.txt"
    source.write_text(text + "\n")
    code, out, err = cli("predict", "-m", trained, "-i", source, "--long-text", "windows")
    assert code == 0, err
    windowed = json.loads(out)
    assert windowed["windows"] == 2
    parts = tmp_path / "parts.txt"
    parts.write_text("\n".join(tok.decode(p) for p in pieces) + "\n")
    code, out, _ = cli("predict", "-m", trained, "-i", parts)
    singles = [json.loads(line)["scores"]["positive"] for line in out.splitlines()]
    assert windowed["scores"]["positive"] == pytest.approx(sum(singles) / 2, abs=1e-4)
    code, _, err = cli("predict", "-m", trained, "-i", source, "--long-text", "windows", "--stride", "64")
    assert code == 2 and "--stride 64 must be smaller" in err


def test_predict_stdin(trained, cli, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a great meal\nan awful meal\n")))
    code, out, _ = cli("predict", "-m", trained, "-i", "-", "--format", "tsv")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("text\tlabel\tscore") and len(lines) == 3


def test_evaluate_writes_metrics_and_plot(trained, cli, easy_data, tmp_path):
    target = tmp_path / "eval"
    code, out, err = cli("evaluate", "-m", trained, "-d", easy_data["test"], "-o", target)
    assert code == 0, err
    metrics = json.loads((target / "metrics.json").read_text())
    assert metrics["accuracy"] >= 0.85 and (target / "confusion_matrix.png").stat().st_size > 1000
    code, _, err = cli("evaluate", "-m", trained, "-d", easy_data["test"], "-o", target)
    assert code == 2 and "--overwrite" in err


def test_bundle_loads_in_transformers_pipeline(trained):
    from transformers import pipeline

    classify = pipeline("text-classification", model=str(trained))
    assert classify("a superb song with lovely staff")[0]["label"] == "positive"


def test_predict_on_plain_hf_model(trained, cli, tmp_path):
    import shutil

    plain = tmp_path / "plain"
    shutil.copytree(trained, plain)
    (plain / "bertkit.json").unlink()
    source = tmp_path / "in.txt"
    source.write_text("wonderful lovely\n")
    code, out, err = cli("predict", "-m", plain, "-i", source)
    assert code == 0, err
    assert json.loads(out)["label"] == "positive"


def test_multi_label_and_regression_and_pairs(tiny_model, easy_data, cli, tmp_path):
    rng = random.Random(3)
    multi = tmp_path / "multi.jsonl"
    reg = tmp_path / "reg.csv"
    pairs = tmp_path / "pairs.csv"
    with multi.open("w") as m, reg.open("w", newline="") as r, pairs.open("w", newline="") as p:
        rw, pw = csv.writer(r), csv.writer(p)
        rw.writerow(["text", "score"])
        pw.writerow(["premise", "hypothesis", "label"])
        for _ in range(160):
            words = rng.sample(["great", "awful", "film", "meal", "the", "was"], 4)
            tags = [t for t, w in (("praise", "great"), ("blame", "awful")) if w in words]
            m.write(json.dumps({"text": " ".join(words), "label": tags}) + "\n")
            rw.writerow([" ".join(words), words.count("great") * 2.5 + 0.5])
            pw.writerow([" ".join(words), rng.choice(["great", "awful"]), rng.choice(["yes", "no"])])
    for name, data, extra in (
        ("multi", multi, "classify:\n  threshold: 0.5\n"),
        ("reg", reg, ""),
        ("pairs", pairs, ""),
    ):
        path = config(tmp_path, tiny_model, data, extra=extra)
        sets = ["--set", "train.epochs=2", "--set", f"output_dir={tmp_path / name}"]
        if name == "reg":
            sets += ["--set", "data.label_column=score"]
        if name == "pairs":
            sets += ["--set", "data.text_column=premise", "--set", "data.text_pair_column=hypothesis"]
        code, _, err = cli("train", "classify", "-c", path, *sets)
        assert code == 0, err
    info = json.loads((tmp_path / "multi" / "bertkit.json").read_text())
    assert info["problem_type"] == "multi_label" and info["labels"] == ["blame", "praise"]
    assert "f1_micro" in info["metrics"]["validation"]
    info = json.loads((tmp_path / "reg" / "bertkit.json").read_text())
    assert info["problem_type"] == "regression" and "spearman" in info["metrics"]["validation"]
    source = tmp_path / "q.jsonl"
    source.write_text(
        json.dumps({"id": 9, "text": "great film", "premise": "great film", "hypothesis": "great"}) + "\n"
    )
    code, out, _ = cli("predict", "-m", tmp_path / "multi", "-i", source)
    row = json.loads(out)
    assert (
        code == 0 and row["id"] == 9 and isinstance(row["labels"], list) and set(row["scores"]) == {"blame", "praise"}
    )
    code, out, _ = cli("predict", "-m", tmp_path / "reg", "-i", source)
    assert code == 0 and isinstance(json.loads(out)["score"], float)
    code, out, _ = cli("predict", "-m", tmp_path / "pairs", "-i", source)
    row = json.loads(out)
    assert code == 0 and row["text_pair"] == "great" and row["label"] in ("yes", "no")


def test_resume_after_interruption(tiny_model, easy_data, tmp_path, monkeypatch):
    from bertkit import training
    from bertkit.config import load_config
    from bertkit.training import run

    cfg = load_config(config(tmp_path, tiny_model, easy_data["train"]), ["train.epochs=2"])

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "write_bundle", interrupted)  # the run looks it up there
    with pytest.raises(KeyboardInterrupt):
        training.train(cfg)
    work = training.work_dir(tmp_path / "model")
    assert any(work.glob("checkpoint-*")) and not (tmp_path / "model").exists()
    monkeypatch.undo()
    from bertkit.core.errors import BertkitError

    with pytest.raises(BertkitError, match="--resume"):
        training.train(cfg)
    final, scores = training.train(cfg, resume=True)
    info = json.loads((final / "bertkit.json").read_text())
    assert scores["validation"] == info["metrics"]["validation"]
    assert info["training"]["train_steps"] == 28 and not work.exists()


def test_frozen_layers_stay_fixed_with_grouping_and_options(tiny_model, easy_data, cli, tmp_path):
    import torch
    from transformers import AutoModel

    options = {
        "classify.truncation": "head+tail",
        "train.freeze_embeddings": "true",
        "train.freeze_layers": "1",
        "train.early_stopping_patience": "1",
        "classify.class_weights": "balanced",
        "train.group_by_length": "true",
    }
    sets = [arg for key, value in options.items() for arg in ("--set", f"{key}={value}")]
    code, _, err = cli("train", "classify", "-c", config(tmp_path, tiny_model, easy_data["train"]), *sets)
    assert code == 0, err
    info = json.loads((tmp_path / "model" / "bertkit.json").read_text())
    assert info["truncation"] == "head+tail" and info["config"]["train"]["group_by_length"] is True
    before = AutoModel.from_pretrained(tiny_model).state_dict()
    after = AutoModel.from_pretrained(tmp_path / "model").state_dict()
    word = "embeddings.word_embeddings.weight"
    assert torch.equal(before[word], after[word])
    assert torch.equal(
        before["encoder.layer.0.attention.self.query.weight"], after["encoder.layer.0.attention.self.query.weight"]
    )
    assert not torch.equal(
        before["encoder.layer.1.attention.self.query.weight"], after["encoder.layer.1.attention.self.query.weight"]
    )
