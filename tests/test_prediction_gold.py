"""`predict` on labelled input: the gold fields keep their names and values in every output format,
and the prediction gets a column of its own (`predicted_<name>`) instead of overwriting them."""

import csv
import json

import pytest


@pytest.fixture(scope="module")
def classifier(tiny_model, tmp_path_factory):
    """A plain Hugging Face folder with an untrained two-label head (no training: fast)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from bertkit.core.models import quiet_transformers

    quiet_transformers()
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("head-classify")
    labels = {0: "negative", 1: "positive"}
    AutoModelForSequenceClassification.from_pretrained(tiny_model, id2label=labels, num_labels=2).save_pretrained(
        folder
    )
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(folder)
    return folder


def read(path, fmt):
    if fmt == "jsonl":
        return [json.loads(line) for line in path.read_text().splitlines()]
    return list(csv.DictReader(path.open(newline=""), delimiter="," if fmt == "csv" else "\t"))


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_a_labelled_table_keeps_its_gold_column(classifier, tmp_path, cli, fmt):
    data = tmp_path / "test.csv"
    gold = ["positive", "negative", "negative", "positive"]
    data.write_text("text,label\n" + "".join(f"review number {i},{g}\n" for i, g in enumerate(gold)))
    out = tmp_path / f"preds.{fmt}"
    code, _, err = cli("predict", "-m", classifier, "-i", data, "-o", out)
    assert code == 0, err
    rows = read(out, fmt)
    assert [r["label"] for r in rows] == gold  # the gold column: its name, its values
    assert all(r["predicted_label"] in ("positive", "negative") for r in rows)
    assert [r["text"] for r in rows] == [f"review number {i}" for i in range(4)]
    if fmt != "jsonl":
        assert list(rows[0])[:3] == ["text", "label", "predicted_label"]


def test_unlabelled_input_and_records_without_the_gold(classifier, tmp_path, cli):
    plain = tmp_path / "texts.txt"
    plain.write_text("a text\n")
    code, out, err = cli("predict", "-m", classifier, "-i", plain)
    assert code == 0, err
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert record["label"] in ("positive", "negative") and "predicted_label" not in record  # nothing to keep
    mixed = tmp_path / "mixed.jsonl"  # labelled input (the first record says so), one record without its label
    mixed.write_text('{"text": "one", "label": "positive"}\n{"text": "two"}\n\n')
    code, out, err = cli("predict", "-m", classifier, "-i", mixed, "-o", tmp_path / "mixed.csv")
    assert code == 0, err
    rows = read(tmp_path / "mixed.csv", "csv")
    assert [r["label"] for r in rows] == ["positive", "", ""] and all(r["predicted_label"] for r in rows[:2])
    assert list(rows[0]) == ["text", "label", "predicted_label", "score", "scores.negative", "scores.positive", "empty"]


def test_ner_gold_tags_and_entities_stay(head_models, tmp_path, cli):
    tokens = tmp_path / "tokens.jsonl"
    tokens.write_text('{"tokens": ["Paris", "is", "big"], "tags": ["B-LOC", "O", "O"]}\n')
    code, out, err = cli("predict", "-m", head_models["ner"], "-i", tokens)
    assert code == 0, err
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert record["tags"] == ["B-LOC", "O", "O"] and len(record["predicted_tags"]) == 3
    code, out, err = cli("predict", "-m", head_models["ner"], "-i", tokens, "-f", "conll")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert [r[:2] for r in rows] == [["Paris", "B-LOC"], ["is", "O"], ["big", "O"]]  # token, gold, then predicted
    assert [r[2] for r in rows] == record["predicted_tags"]
    spans = tmp_path / "spans.jsonl"
    spans.write_text('{"text": "Paris is big", "entities": [{"type": "LOC", "start": 0, "end": 5}]}\n')
    code, out, err = cli("predict", "-m", head_models["ner"], "-i", spans)
    assert code == 0, err
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert record["entities"] == [{"type": "LOC", "start": 0, "end": 5}] and "predicted_entities" in record

