"""`bertkit select` (bertkit/selection/): the strategies' rankings on known scores, and picks
from trained tiny bundles: never a labelled text, the pool's format with an empty label field,
the same order predict's scores give, and the refusals."""

import csv
import json

import numpy as np
import pytest

from bertkit.selection import strategies


def test_each_strategy_ranks_the_unsure_first():
    rows = [np.array([[0.9, 0.1]]), np.array([[0.55, 0.45]]), np.array([[0.7, 0.3]])]
    for name in ("least-confidence", "margin", "entropy", "margin-clusters"):
        found = strategies.uncertainties(rows, name)
        assert strategies.pick(found, 2, name if name != "margin-clusters" else "margin") == [1, 2]
    # three classes: margin reads the two best, least-confidence the best alone
    three = [np.array([[0.5, 0.49, 0.01]]), np.array([[0.4, 0.3, 0.3]])]
    assert strategies.pick(strategies.uncertainties(three, "margin"), 1, "margin") == [0]
    assert strategies.pick(strategies.uncertainties(three, "least-confidence"), 1, "least-confidence") == [1]
    # a text's uncertainty is the sum over its rows (labels, words)
    assert strategies.row_uncertainty(np.array([[0.5, 0.5], [0.5, 0.5]]), "margin") == pytest.approx(2.0)
    assert strategies.row_uncertainty(np.zeros((0, 3)), "entropy") == 0.0


def test_random_and_clustered_picks():
    uncertain = np.arange(20, dtype=float)
    drawn = strategies.pick(uncertain, 5, "random", seed=3)
    assert len(set(drawn)) == 5 and drawn == strategies.pick(uncertain, 5, "random", seed=3)
    assert drawn != strategies.pick(uncertain, 5, "random", seed=4)
    # three far-apart groups: one pick from each, its most unsure member, though group 0 holds the most unsure texts
    vectors = np.repeat(np.eye(3) * 10, [10, 5, 5], axis=0) + np.random.default_rng(0).normal(0, 0.01, (20, 3))
    uncertain = np.array([9.0] * 10 + [1.0] * 5 + [2.0] * 5)
    uncertain[[3, 12, 17]] += 0.5
    assert strategies.pick(uncertain, 3, "margin-clusters", vectors) == [3, 17, 12]
    assert strategies.pick(uncertain, 3, "margin") == [3, 0, 1]  # plain margin takes group 0 thrice


# ---------------------------------------------------------------- trained tiny bundles


@pytest.fixture
def pool(tmp_path, easy_data):
    """A pool: 30 new texts, 5 of the training file's, one repeated, one blank."""
    train = list(csv.DictReader(easy_data["train"].open()))
    path = tmp_path / "pool.csv"
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "text"])
        words = ["great", "awful", "film", "meal", "lovely", "boring", "staff", "the", "was", "plot"]
        rng = np.random.default_rng(1)
        for i in range(30):
            writer.writerow([f"n{i}", " ".join(rng.choice(words, 5))])
        for i, row in enumerate(train[:5]):
            writer.writerow([f"t{i}", "  " + row["text"].replace(" ", "  ")])  # spaced otherwise: still the same text
        writer.writerow(["t5", train[5]["text"].upper()])  # the uncased model reads it as the training text
        writer.writerow(["r", " ".join(rng.choice(words, 5))])
        writer.writerow(["r2", ""])
    return path, {r["text"] for r in train}


@pytest.mark.slow
def test_picks_leave_out_labelled_texts_and_keep_the_pool_format(learned_classify_bundle, pool, cli, tmp_path):
    source, training = pool
    out = tmp_path / "picks.csv"
    code, stdout, err = cli("select", "-m", learned_classify_bundle, "-i", source, "-o", out, "-n", "40",
                            "--strategy", "margin")  # fmt: skip
    assert code == 0, err
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == ["id", "text", "label"] and all(r["label"] == "" for r in rows)
    assert not any(" ".join(r["text"].split()) in training for r in rows)
    assert len(rows) == len({r["text"] for r in rows}) == 31  # 40 asked, 31 new texts in the pool
    assert "6 already in the labelled data" in stdout + err and "1 blank" in stdout + err

    # margin's order is the order of predict's scores: the nearest ties first
    code, predicted, err = cli("predict", "-m", learned_classify_bundle, "-i", source)
    assert code == 0, err
    margins = {}
    for line in predicted.splitlines():
        row = json.loads(line)
        if row.get("score") is not None:
            top = sorted(row["scores"].values())
            margins[row["id"]] = 1 - (top[-1] - top[-2])
    code, _, err = cli("select", "-m", learned_classify_bundle, "-i", source, "-o", out, "-n", "5",
                       "--strategy", "margin", "--overwrite")  # fmt: skip
    assert code == 0, err
    picked = [r["id"] for r in csv.DictReader(out.open())]
    new = {k: v for k, v in margins.items() if not k.startswith("t") and k != "r2"}
    assert [margins[i] for i in picked] == pytest.approx(sorted(new.values(), reverse=True)[:5], abs=1e-4)

    # margin-clusters and the other formats: JSON lines in, JSON lines out with a null label
    jsonl = tmp_path / "pool.jsonl"
    jsonl.write_text("".join(json.dumps({"text": f"great film {w}"}) + "\n" for w in ("a", "b", "c", "d", "e")))
    code, _, err = cli("select", "-m", learned_classify_bundle, "-i", jsonl, "-o", tmp_path / "p.jsonl", "-n", "2")
    assert code == 0, err
    picks = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(picks) == 2 and all(p["label"] is None and p["text"].startswith("great film") for p in picks)
    text = tmp_path / "pool.txt"
    text.write_text("great film a\nawful meal b\n")
    code, _, err = cli("select", "-m", learned_classify_bundle, "-i", text, "-o", tmp_path / "t.csv", "-n", "1")
    assert code == 0, err
    assert list(csv.DictReader((tmp_path / "t.csv").open()))[0]["label"] == ""


@pytest.mark.slow
def test_refusals_write_nothing(learned_classify_bundle, bundles, pool, easy_data, cli, tmp_path):
    source, _ = pool
    out = tmp_path / "picks.csv"
    cases = [
        (["-i", easy_data["train"]], "labelled data of the model"),
        (["-i", easy_data["test"]], "labelled data of the model"),  # the test split: labelled too
        (["-i", source, "-o", tmp_path / "picks.txt"], "name the file .csv, .tsv or .jsonl"),
        (["-i", source, "--strategy", "smart"], "--strategy smart: use one of"),
        (["-i", source, "--exclude", tmp_path / "gone.csv"], "--exclude"),
        (["-i", source, "-m", bundles["qa"]], "Use a classify or ner model"),
    ]
    for extra, said in cases:
        args = ["select", "-m", learned_classify_bundle, "-o", out, *extra]
        code, _, err = cli(*args)
        assert code == 2 and said in err, (extra, err)
        assert not out.exists() and not (tmp_path / "picks.txt").exists()
    out.write_text("mine\n")
    code, _, err = cli("select", "-m", learned_classify_bundle, "-i", source, "-o", out)
    assert code == 2 and "--overwrite" in err and out.read_text() == "mine\n"
    # the model's labelled data is never written over, --overwrite or not (a slip of -o train.csv)
    before = easy_data["train"].read_bytes()
    code, _, err = cli("select", "-m", learned_classify_bundle, "-i", source, "-o", easy_data["train"], "--overwrite")
    assert code == 2 and easy_data["train"].read_bytes() == before, err
    # --exclude adds a labelled file: none of its texts is picked
    extra = tmp_path / "more.csv"
    rows = list(csv.DictReader(source.open()))[:10]
    extra.write_text("text,label\n" + "".join(f"{r['text']},positive\n" for r in rows))
    code, stdout, err = cli("select", "-m", learned_classify_bundle, "-i", source, "-o", tmp_path / "x.csv",
                            "-n", "100", "--exclude", extra)  # fmt: skip
    assert code == 0, err
    left = {r["text"] for r in csv.DictReader((tmp_path / "x.csv").open())}
    assert not left & {r["text"] for r in rows} and len(left) == 21


@pytest.mark.slow
def test_labelled_data_is_found_from_any_folder(tiny_model, easy_data, cli, tmp_path, monkeypatch):
    """A model trained on relative paths keeps its labelled data's absolute paths, so select run
    elsewhere still leaves those texts out; a bundle that only has the relative ones (older
    bundles) refuses rather than pick labelled texts, until --exclude says where they are."""
    import shutil

    data = tmp_path / "project"
    data.mkdir()
    shutil.copy(easy_data["train"], data / "train.csv")
    monkeypatch.chdir(data)
    (data / "run.yaml").write_text(f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 16\n"
                                   "data:\n  train: train.csv\ntrain:\n  epochs: 1\noutput_dir: model\n")  # fmt: skip
    code, _, err = cli("train", "classify", "-c", "run.yaml")
    assert code == 0, err
    info = json.loads((data / "model" / "bertkit.json").read_text())
    assert info["config"]["data"]["train"]["path"] == "train.csv"
    assert info["labelled_data"]["train"]["path"] == str(data / "train.csv")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, _, err = cli("select", "-m", data / "model", "-i", data / "train.csv", "-o", "p.csv")
    assert code == 2 and "labelled data of the model" in err
    pool = elsewhere / "pool.csv"
    pool.write_text((data / "train.csv").read_text())
    code, out, err = cli("select", "-m", data / "model", "-i", pool, "-o", "p.csv")
    assert code == 2 and "no text to pick from" in err and not (elsewhere / "p.csv").exists()
    # an older bundle: the relative path alone
    del info["labelled_data"]
    (data / "model" / "bertkit.json").write_text(json.dumps(info))
    code, _, err = cli("select", "-m", data / "model", "-i", pool, "-o", "p.csv")
    assert code == 2 and "is not here" in err and "--exclude" in err
    code, _, err = cli("select", "-m", data / "model", "-i", pool, "-o", "p.csv", "--exclude", data / "train.csv")
    assert code == 2 and "no text to pick from" in err


@pytest.mark.slow
def test_other_text_fields_and_exported_models(learned_classify_bundle, cli, tmp_path):
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"review": f"great film {w}", "stars": 3}) + "\n" for w in "abcdef"))
    code, _, err = cli("select", "-m", learned_classify_bundle, "-i", pool, "-o", tmp_path / "p.jsonl", "-n", "2")
    assert code == 2 and "--text-column" in err
    code, _, err = cli("select", "-m", learned_classify_bundle, "-i", pool, "-o", tmp_path / "p.jsonl", "-n", "2",
                       "--text-column", "review")  # fmt: skip
    assert code == 0, err
    picks = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [set(p) for p in picks] == [{"review", "stars", "label"}] * 2
    pytest.importorskip("onnxruntime")
    assert cli("export", "-m", learned_classify_bundle, "--format", "onnx", "-o", tmp_path / "onnx")[0] == 0
    code, _, err = cli("select", "-m", tmp_path / "onnx", "-i", pool, "-o", tmp_path / "q.jsonl",
                       "--text-column", "review")  # fmt: skip
    assert code == 2 and "ONNX" in err and not (tmp_path / "q.jsonl").exists()
    code, _, err = cli("select", "-m", tmp_path / "onnx", "-i", pool, "-o", tmp_path / "q.jsonl",
                       "--text-column", "review", "--strategy", "margin", "-n", "2")  # fmt: skip
    assert code == 0, err


@pytest.mark.slow
def test_multi_label_and_ner_picks(multi_label_bundle, bundles, cli, tmp_path):
    pool = tmp_path / "pool.txt"
    pool.write_text("great film was the\nawful meal\nthe was film meal\ngreat awful film\n")
    code, _, err = cli("select", "-m", multi_label_bundle, "-i", pool, "-o", tmp_path / "m.jsonl", "-n", "2",
                       "--strategy", "entropy")  # fmt: skip
    assert code == 0, err
    picks = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert len(picks) == 2 and all(p["label"] is None for p in picks)

    sentences = tmp_path / "sentences.txt"
    sentences.write_text("Alice Smith flew from Paris to Kyoto .\nnothing here\nBob met Carol in Rome\n")
    code, _, err = cli("select", "-m", bundles["ner"], "-i", sentences, "-o", tmp_path / "n.jsonl", "-n", "2",
                       "--strategy", "least-confidence")  # fmt: skip
    assert code == 0, err
    picks = [json.loads(line) for line in (tmp_path / "n.jsonl").read_text().splitlines()]
    assert len(picks) == 2 and all(p["entities"] is None for p in picks)
    # summed over the words: the long sentences outrank "nothing here"
    assert "nothing here" not in [p["text"] for p in picks]
    # a sentence of the training data, written with its punctuation attached, is one the model has
    from transformers import AutoTokenizer

    from bertkit.tasks.ner.selecting import NerSelection

    tokenizer = AutoTokenizer.from_pretrained(bundles["ner"])
    part = NerSelection()
    assert part.key("Alice went to Paris.", tokenizer) == part.key("Alice went to Paris .", tokenizer)
    conll = [{"tokens": ["Alice", "went", "to", "Paris", "."], "tags": ["B-PER", "O", "O", "B-LOC", "O"]}]
    keys = {part.key(t, tokenizer) for t in part.training_texts(conll, {"task": "ner"})}
    assert part.key("Alice  went to Paris.", tokenizer) in keys
